"""A small spoken corpus synthesized offline with eSpeak NG, in LibriSpeech's layout.

The built-in `spoken_synth` problem trains and decodes speech recognition end
to end with no download. This module makes its raw data:

1. **Text** (`make_sentence`): sentences from a small grammar of commands
   and statements ("put the red cup on the table", "wait five minutes")
   over about 170 short, common, lower-case English words. Every word has
   one spelling for its sound within the vocabulary (no "to"/"two",
   "for"/"four", "read"), so the transcript is recoverable from the audio.
   A grammar rather than random word strings gives a small byte-level
   model some language context, so it can learn the task in minutes.
2. **Plan** (`plan_corpus`): each utterance gets its voice, speaking rate,
   pitch, noise and silences from a seeded RNG, in the main process, so the
   whole corpus is a function of `CorpusConfig` alone.
3. **Audio** (`render_utterance`): eSpeak NG at 22.05 kHz, resampled to
   16 kHz, peak-normalized, padded with silence and mixed with white or
   pink noise at the planned SNR. Each utterance's noise comes from its own
   seed, so worker count and order never change a sample. Utterances are
   rendered in parallel, one eSpeak NG process per worker.
4. **Long recordings** (`partition_long`, `join_with_pauses`): the `long`
   subset, for long-form transcription. All test utterances, in order, are
   cut greedily into runs whose length is drawn uniformly from
   `long_duration_s` (20-120 s); each run's FLACs, read back from the test
   subset (the very same samples), are joined with 0.5 s pauses of white
   noise 40 dB below the run's speech level. Its transcript is the
   components' transcripts joined with spaces, so decoding the run whole is
   comparable with decoding the test split one utterance at a time.
5. **Tree** (`build_corpus`): FLAC files and transcripts laid out exactly like
   LibriSpeech, so the same reader ingests both:

       root/LibriSpeech/{train,dev,test,long}/<speaker>/<chapter>/
           <speaker>-<chapter>.trans.txt     "<speaker>-<chapter>-<utt> text"
           <speaker>-<chapter>-<utt:04d>.flac
       root/LibriSpeech/SPEAKERS.TXT           speaker id -> eSpeak voice
       root/long_recordings.json               long id -> its test utterance ids
       root/corpus.json                        marker: parameters + summary

   A speaker id stands for one voice (accent + variant). The tree is built in
   `root.incomplete` and renamed into place after the marker is written, so
   an interrupted run never leaves a tree that looks complete; a tree whose
   marker holds other parameters is rebuilt.

Example:
    >>> config = CorpusConfig(split_sizes={"train": 40, "dev": 8, "test": 8})
    >>> summary = build_corpus("/tmp/spoken", config)  # doctest: +SKIP
    >>> summary.utterances["train"]  # doctest: +SKIP
    40
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import json
import os
import random
import shutil
import threading
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import scipy.fft
from absl import logging

from t2t_lite.data import audio_io
from t2t_lite.data.espeak import EspeakSynthesizer

SAMPLE_RATE = audio_io.SAMPLE_RATE
MARKER_NAME = "corpus.json"
FORMAT_VERSION = 2  # bump when the audio pipeline changes, to rebuild old trees
LONG = "long"  # the subset of long recordings made of consecutive test utterances
LONG_MAPPING_NAME = "long_recordings.json"  # {long id: [test utterance ids, in order]}

# ----------------------------------------------------------------- the text

# Word classes of the grammar. Rules for adding words: short, common, lower
# case a-z, pronounced one way, and no homophone elsewhere in the vocabulary
# (hence "two" but no "to"/"too", "four" but no "for", no "read"/"close").
NUMBERS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
DIGITS = ("zero", "one") + NUMBERS[:-1]
COLORS = ("red", "blue", "green", "black", "white", "yellow", "brown", "pink", "gray")
ADJECTIVES = ("big", "small", "old", "new", "hot", "cold", "long", "short", "heavy", "empty")
# Nouns with their plurals; both forms are vocabulary words.
NOUNS = {
    "door": "doors", "window": "windows", "light": "lights", "box": "boxes",
    "cup": "cups", "book": "books", "table": "tables", "chair": "chairs",
    "bag": "bags", "ball": "balls", "hat": "hats", "coat": "coats",
    "shoe": "shoes", "key": "keys", "phone": "phones", "lamp": "lamps",
    "clock": "clocks", "desk": "desks", "pen": "pens", "map": "maps",
    "plate": "plates", "bottle": "bottles", "car": "cars", "boat": "boats",
}  # fmt: skip
ANIMALS = ("dog", "cat", "bird", "fish", "horse", "cow", "duck", "frog", "goat")
VERBS = (
    "open", "shut", "move", "find", "take", "bring", "push", "pull", "wash",
    "clean", "paint", "check", "drop", "lift", "hold", "hide", "fix", "show",
)  # fmt: skip
PLACES = ("kitchen", "garden", "hall", "office", "garage", "bedroom", "yard", "shop")
PREPOSITIONS = ("on", "in", "under", "near", "behind", "above", "below", "beside", "inside")
NAMES = ("anna", "peter", "maria", "david", "sam", "lucy", "tom", "emma", "ben", "kate")
DIRECTIONS = ("left", "right", "up", "down", "forward", "back")
TIMES = ("today", "tomorrow", "now", "later", "tonight")
UNITS = ("minutes", "hours", "seconds")

SLOTS: dict[str, tuple[str, ...]] = {
    "number": NUMBERS,
    "digit": DIGITS,
    "color": COLORS,
    "adjective": ADJECTIVES,
    "noun": tuple(NOUNS),
    "plural": tuple(NOUNS.values()),
    "animal": ANIMALS,
    "verb": VERBS,
    "place": PLACES,
    "prep": PREPOSITIONS,
    "name": NAMES,
    "direction": DIRECTIONS,
    "time": TIMES,
    "unit": UNITS,
}

# `{slot}` is replaced by a random word of that class. "{number} {plural}"
# keeps counts grammatical ("one" only goes with a singular noun).
TEMPLATES = (
    "{verb} the {noun}",
    "please {verb} the {adjective} {noun}",
    "{verb} the {color} {noun} {prep} the {noun}",
    "{verb} the {noun} in the {place}",
    "the {animal} is {prep} the {noun}",
    "the {adjective} {animal} is in the {place}",
    "{name} has one {color} {noun}",
    "{name} has {number} {color} {plural}",
    "there are {number} {plural} {prep} the {noun}",
    "where is the {color} {noun}",
    "is the {noun} in the {place}",
    "{name} and {name} are in the {place}",
    "{name} will {verb} the {noun} {time}",
    "go {direction} {number} steps",
    "turn {direction}",
    "turn {direction} and stop",
    "wait {number} {unit}",
    "call {name} {time}",
    "hello {name}",
    "good morning {name}",
    "good night {name}",
    "the code is {digit} {digit} {digit} {digit}",
    "my {animal} is {adjective}",
    "start the {color} {noun} now",
)
COMPOUND_PROBABILITY = 0.25  # "<sentence> and then <sentence>", up to 12 words
MIN_WORDS, MAX_WORDS = 2, 12


def _template_words(template: str) -> set[str]:
    return {word for word in template.split() if not word.startswith("{")}


def vocabulary() -> list[str]:
    """Every word the grammar can produce, sorted.

    Returns:
      The distinct words (about 160).

    Example:
      >>> len(vocabulary()) >= 100
      True
    """
    words = {"and", "then"}  # the compound joiner
    for template in TEMPLATES:
        words |= _template_words(template)
    for choices in SLOTS.values():
        words.update(choices)
    return sorted(words)


def _expand(template: str, rng: random.Random) -> list[str]:
    words = []
    for token in template.split():
        if token.startswith("{"):
            words.append(rng.choice(SLOTS[token[1:-1]]))
        else:
            words.append(token)
    return words


def make_sentence(rng: random.Random) -> str:
    """One random sentence of the grammar: 2-12 lower-case words, single spaces.

    Args:
      rng: the random source; the same state gives the same sentence.

    Returns:
      The sentence, e.g. "put the red cup on the table".

    Example:
      >>> make_sentence(random.Random(0))
      'tom will shut the bag tonight'
    """
    words = _expand(rng.choice(TEMPLATES), rng)
    if rng.random() < COMPOUND_PROBABILITY:
        second = _expand(rng.choice(TEMPLATES), rng)
        if len(words) + 2 + len(second) <= MAX_WORDS:
            words += ["and", "then"] + second
    return " ".join(words)


def _grammar_fingerprint() -> str:
    """A hash of the grammar: editing it invalidates trees made with the old one."""
    grammar = json.dumps(
        {"slots": SLOTS, "templates": TEMPLATES, "compound": COMPOUND_PROBABILITY},
        sort_keys=True,
    )
    return hashlib.sha256(grammar.encode()).hexdigest()[:16]


# ---------------------------------------------------------------- the plan

# eSpeak NG voices measured to be distinct: seven accents, four female and
# four male variants for training. The test voice's accent (New York) and
# variant (f3) are both unheard in training; so are their combination's
# formants, which is what "a new speaker" means here.
TRAIN_VOICES = (
    "en-us",
    "en-gb+f2",
    "en-gb-scotland+m3",
    "en-029+f4",
    "en-gb-x-rp+m1",
    "en-us+klatt",
    "en-gb-x-gbclan+f1",
    "en-gb-x-gbcwmd+f5",
)
TEST_VOICES = ("en-us-nyc+f3",)


@dataclasses.dataclass(frozen=True)
class CorpusConfig:
    """Everything that determines the corpus; its JSON is the tree's marker.

    Attributes:
      split_sizes: utterances per split ("train", "dev", "test").
      train_voices: eSpeak voices ("accent+variant") of train and dev.
      test_voices: voices of test only; must not appear in `train_voices`.
      rate_wpm: inclusive range of speaking rates, words per minute.
      pitch: inclusive range of eSpeak base pitch (0-100, 50 is normal).
      train_snr_db: SNR range of the noise mixed into train and dev.
      test_snr_db: SNR range of the (milder) noise mixed into test.
      clean_fraction: share of train/dev utterances left without noise.
      silence_s: range of the silence padded before and after the speech.
      utterances_per_chapter: LibriSpeech-like chapter size.
      seed: the corpus seed; the same config gives identical files.
      long_duration_s: range of the target lengths of the long recordings
        (see `partition_long`).
      long_pause_s: the pause between the test utterances of a long recording.
      long_pause_noise_db: level of the pauses' white noise below the
        recording's speech level (RMS), in dB.
    """

    split_sizes: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: {"train": 5000, "dev": 200, "test": 200}
    )
    train_voices: tuple[str, ...] = TRAIN_VOICES
    test_voices: tuple[str, ...] = TEST_VOICES
    rate_wpm: tuple[int, int] = (140, 200)
    pitch: tuple[int, int] = (35, 65)
    train_snr_db: tuple[float, float] = (10.0, 30.0)
    test_snr_db: tuple[float, float] = (25.0, 35.0)
    clean_fraction: float = 0.2
    silence_s: tuple[float, float] = (0.05, 0.2)
    utterances_per_chapter: int = 100
    seed: int = 1234
    long_duration_s: tuple[float, float] = (20.0, 120.0)
    long_pause_s: float = 0.5
    long_pause_noise_db: float = 40.0

    def __post_init__(self) -> None:
        held_out = set(self.test_voices) & set(self.train_voices)
        if held_out:
            raise ValueError(
                f"Test voices must be unheard in training, but {sorted(held_out)} "
                "is in both train_voices and test_voices."
            )
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0 (a NumPy seed), got {self.seed}.")
        if not self.train_voices or not self.test_voices:
            raise ValueError("CorpusConfig needs at least one train and one test voice.")
        unknown = set(self.split_sizes) - {"train", "dev", "test"}
        if unknown or any(size < 0 for size in self.split_sizes.values()):
            raise ValueError(
                f"split_sizes must map train/dev/test to counts >= 0, got {self.split_sizes}."
            )
        low, high = self.long_duration_s
        if not 0 < 2 * low <= high or self.long_pause_s < 0:
            raise ValueError(
                "long_duration_s must be (min, max) with 0 < 2 * min <= max (so that runs "
                "can always be cut within the bounds) and long_pause_s >= 0, got "
                f"{self.long_duration_s} and {self.long_pause_s}."
            )

    def voices(self, split: str) -> tuple[str, ...]:
        """The voices speaking `split`: the held-out ones for test only."""
        return self.test_voices if split in ("test", LONG) else self.train_voices

    def parameters(self) -> dict:
        """The JSON-able parameters stored in (and compared with) the marker."""
        parameters = dataclasses.asdict(self)
        parameters["split_sizes"] = dict(sorted(self.split_sizes.items()))
        parameters["grammar"] = _grammar_fingerprint()
        parameters["format_version"] = FORMAT_VERSION
        # Round trip so tuples compare equal to the lists read back from JSON.
        return json.loads(json.dumps(parameters))


class _TreeEntry:
    """LibriSpeech naming of an entry with subset, speaker_id, chapter_id and index."""

    subset: str
    speaker_id: int
    chapter_id: int
    index: int

    @property
    def utterance_id(self) -> str:
        return f"{self.speaker_id}-{self.chapter_id}-{self.index:04d}"

    @property
    def relative_dir(self) -> str:
        return os.path.join("LibriSpeech", self.subset, str(self.speaker_id), str(self.chapter_id))


@dataclasses.dataclass(frozen=True)
class UtterancePlan(_TreeEntry):
    """How to render one utterance; a pure function of it gives the audio."""

    subset: str
    speaker_id: int
    chapter_id: int
    index: int  # within the chapter
    text: str
    voice: str
    rate_wpm: int
    pitch: int
    snr_db: float | None  # None: clean
    noise_color: str  # "white" or "pink"
    lead_silence_s: float
    tail_silence_s: float
    noise_seed: tuple[int, int, int]  # (corpus seed, split index, position)


SPLITS = ("train", "dev", "test")


def speaker_ids(config: CorpusConfig) -> dict[str, int]:
    """Voice -> LibriSpeech-style speaker id (train voices 101.., test voices 901..)."""
    ids = {voice: 101 + i for i, voice in enumerate(config.train_voices)}
    ids.update({voice: 901 + i for i, voice in enumerate(config.test_voices)})
    return ids


def _split_texts(config: CorpusConfig, split: str, taken: set[str]) -> list[str]:
    """`split`'s sentences; dev and test avoid sentences already in `taken` (train)."""
    rng = random.Random(f"spoken-text-{config.seed}-{split}")
    texts = []
    for _ in range(config.split_sizes.get(split, 0)):
        text = make_sentence(rng)
        for _ in range(100):  # new sentences, as far as the grammar allows
            if text not in taken:
                break
            text = make_sentence(rng)
        texts.append(text)
    return texts


def plan_corpus(config: CorpusConfig) -> dict[str, list[UtterancePlan]]:
    """Every utterance of every split, in a deterministic order.

    Voices take turns (balanced speakers); rate, pitch, noise and silences are
    drawn per utterance from a split-seeded RNG.

    Args:
      config: the corpus parameters.

    Returns:
      split name -> its utterance plans, grouped by speaker and chapter.

    Example:
      >>> plans = plan_corpus(CorpusConfig(split_sizes={"train": 3, "dev": 1, "test": 1}))
      >>> [plan.voice for plan in plans["test"]]
      ['en-us-nyc+f3']
    """
    ids = speaker_ids(config)
    train_texts = set(_split_texts(config, "train", set()))
    plans: dict[str, list[UtterancePlan]] = {}
    next_chapter = 1
    for split_index, split in enumerate(SPLITS):
        texts = _split_texts(config, split, set() if split == "train" else train_texts)
        voices = config.voices(split)
        rng = random.Random(f"spoken-audio-{config.seed}-{split}")
        snr_range = config.test_snr_db if split == "test" else config.train_snr_db
        clean_fraction = 0.0 if split == "test" else config.clean_fraction
        by_voice: dict[str, list[dict]] = {voice: [] for voice in voices}
        for position, text in enumerate(texts):
            clean = rng.random() < clean_fraction
            snr_db = None if clean else round(rng.uniform(*snr_range), 2)
            by_voice[voices[position % len(voices)]].append(
                {
                    "text": text,
                    "rate_wpm": rng.randint(*config.rate_wpm),
                    "pitch": rng.randint(*config.pitch),
                    "snr_db": snr_db,
                    "noise_color": rng.choice(("white", "pink")),
                    "lead_silence_s": round(rng.uniform(*config.silence_s), 3),
                    "tail_silence_s": round(rng.uniform(*config.silence_s), 3),
                    "noise_seed": (config.seed, split_index, position),
                }
            )
        split_plans = []
        for voice in voices:  # one speaker per voice; chapters of fixed size
            drawn = by_voice[voice]
            for start in range(0, len(drawn), config.utterances_per_chapter):
                chunk = drawn[start : start + config.utterances_per_chapter]
                for index, fields in enumerate(chunk):
                    split_plans.append(
                        UtterancePlan(
                            subset=split,
                            speaker_id=ids[voice],
                            chapter_id=next_chapter,
                            index=index,
                            voice=voice,
                            **fields,
                        )
                    )
                next_chapter += 1
        plans[split] = split_plans
    return plans


# ------------------------------------------------------- the long recordings


@dataclasses.dataclass(frozen=True)
class LongRecording(_TreeEntry):
    """One recording of the long subset: consecutive test utterances with pauses."""

    subset: str
    speaker_id: int  # its first component's
    chapter_id: int
    index: int  # within the chapter
    text: str  # the components' transcripts joined with single spaces
    voice: str  # its first component's
    components: tuple[str, ...]  # test utterance ids, in order
    noise_seed: tuple[int, int, int]  # (corpus seed, 3, recording number)


def partition_long(durations: Sequence[int], config: CorpusConfig) -> list[list[int]]:
    """Cuts consecutive utterances into runs of a random target length.

    Greedy, in order: each run draws a target uniformly from
    `config.long_duration_s` (seeded by `config.seed`) and takes utterances
    while the run, with `long_pause_s` between utterances, stays within the
    target, and always until it reaches the minimum. A last run under the
    minimum joins the previous one; if that makes it longer than the
    maximum, the joined run is cut in two at its most even point. So every
    run is within the bounds when utterances are short next to the minimum
    (`CorpusConfig` requires the maximum to be at least twice the minimum),
    except one run of everything when the split is shorter than the minimum.

    Args:
      durations: each utterance's length, in samples at 16 kHz.
      config: the corpus parameters (`long_duration_s`, `long_pause_s`, `seed`).

    Returns:
      The runs, as lists of indices into `durations`; together they are
      `range(len(durations))`, in order.

    Example:
      >>> config = CorpusConfig(long_duration_s=(2.0, 4.0))
      >>> partition_long([16000] * 6, config)  # 1 s each: 2.5 s runs
      [[0, 1], [2, 3], [4, 5]]
    """
    pause = round(config.long_pause_s * SAMPLE_RATE)
    low, high = (seconds * SAMPLE_RATE for seconds in config.long_duration_s)

    def length(run: Sequence[int]) -> int:
        return sum(durations[i] for i in run) + pause * (len(run) - 1)

    rng = random.Random(f"spoken-long-{config.seed}")
    runs: list[list[int]] = []
    position = 0
    while position < len(durations):
        target = rng.uniform(low, high)
        run = [position]
        position += 1
        while position < len(durations):
            if length(run) >= low and length(run) + pause + durations[position] > target:
                break
            run.append(position)
            position += 1
        runs.append(run)
    if len(runs) > 1 and length(runs[-1]) < low:
        joined = runs[-2] + runs.pop()
        runs[-1] = joined
        if length(joined) > high:
            cut = min(
                range(1, len(joined)),
                key=lambda k: abs(length(joined[:k]) - length(joined[k:])),
            )
            runs[-1:] = [joined[:cut], joined[cut:]]
    return runs


def plan_long(
    config: CorpusConfig,
    test_plans: Sequence[UtterancePlan],
    samples: Mapping[str, int],
    first_chapter: int,
) -> list[LongRecording]:
    """The long recordings made of `test_plans`, given their rendered lengths.

    Args:
      config: the corpus parameters.
      test_plans: the test split's plans, in corpus order.
      samples: utterance id -> its sample count (the rendered test audio).
      first_chapter: the first unused chapter id.

    Returns:
      The recordings, in order; chapters of `utterances_per_chapter`
      recordings per speaker, numbered from `first_chapter`.
    """
    runs = partition_long([samples[plan.utterance_id] for plan in test_plans], config)
    recordings = []
    chapter, index, speaker = first_chapter - 1, 0, None
    for number, run in enumerate(runs):
        first = test_plans[run[0]]
        if first.speaker_id != speaker or index == config.utterances_per_chapter:
            chapter, index, speaker = chapter + 1, 0, first.speaker_id
        recordings.append(
            LongRecording(
                subset=LONG,
                speaker_id=first.speaker_id,
                chapter_id=chapter,
                index=index,
                text=" ".join(test_plans[i].text for i in run),
                voice=first.voice,
                components=tuple(test_plans[i].utterance_id for i in run),
                noise_seed=(config.seed, len(SPLITS), number),
            )
        )
        index += 1
    return recordings


# --------------------------------------------------------------- the audio

PEAK_LEVEL = 0.7  # speech peak before noise: headroom so noise never clips


def _noise(num_samples: int, color: str, rng: np.random.Generator) -> np.ndarray:
    """Unit-power white or pink (1/f power) noise."""
    if color == "white":
        noise = rng.standard_normal(num_samples)
    elif color == "pink":
        # Shape white noise by 1/sqrt(f) in amplitude; an FFT-friendly length
        # (then trimmed) keeps this fast for any utterance length.
        length = scipy.fft.next_fast_len(num_samples, real=True)
        spectrum = np.fft.rfft(rng.standard_normal(length))
        frequencies = np.arange(spectrum.size, dtype=np.float64)
        frequencies[0] = 1.0  # keep DC finite; the mean is removed below anyway
        noise = np.fft.irfft(spectrum / np.sqrt(frequencies), n=length)[:num_samples]
        noise -= noise.mean()
    else:
        raise ValueError(f"noise color must be 'white' or 'pink', got {color!r}.")
    return noise / max(float(np.sqrt(np.mean(np.square(noise)))), 1e-12)


def render_utterance(plan: UtterancePlan, synthesizer: EspeakSynthesizer) -> np.ndarray:
    """Speaks `plan.text` and applies the planned silences and noise.

    Args:
      plan: the utterance's plan (text, voice, rate, pitch, noise).
      synthesizer: an eSpeak NG synthesizer (one per process).

    Returns:
      float32 mono samples at 16 kHz in [-1, 1]; identical for identical plans.

    Example:
      >>> plan = plan_corpus(CorpusConfig(split_sizes={"test": 1}))["test"][0]
      >>> with EspeakSynthesizer() as synthesizer:  # doctest: +SKIP
      ...     waveform = render_utterance(plan, synthesizer)
    """
    speech, rate = synthesizer.synthesize(
        plan.text, voice=plan.voice, rate_wpm=plan.rate_wpm, pitch=plan.pitch
    )
    speech = audio_io.resample(speech, rate, SAMPLE_RATE).astype(np.float64)
    # A common peak level: eSpeak's variants differ by up to 4x in loudness
    # (klatt is quiet) and a few touch full scale.
    speech *= PEAK_LEVEL / max(float(np.abs(speech).max()), 1e-6)
    speech_power = float(np.mean(np.square(speech)))
    waveform = np.concatenate(
        [
            np.zeros(round(plan.lead_silence_s * SAMPLE_RATE)),
            speech,
            np.zeros(round(plan.tail_silence_s * SAMPLE_RATE)),
        ]
    )
    if plan.snr_db is not None:
        rng = np.random.default_rng(plan.noise_seed)
        noise_rms = np.sqrt(speech_power / 10.0 ** (plan.snr_db / 10.0))
        waveform += noise_rms * _noise(waveform.size, plan.noise_color, rng)
    peak = float(np.abs(waveform).max())
    if peak > 0.99:  # rare: loud noise peaks; scale rather than clip
        waveform *= 0.99 / peak
    return waveform.astype(np.float32)


def join_with_pauses(
    components: Sequence[np.ndarray], config: CorpusConfig, noise_seed: Sequence[int]
) -> np.ndarray:
    """int16 utterances -> one int16 recording, with noisy pauses between them.

    The components' samples are kept exactly; each pause is
    `config.long_pause_s` of white noise `config.long_pause_noise_db` below
    the RMS level of the components together (never digital silence).

    Args:
      components: int16 PCM waveforms, in order.
      config: the corpus parameters.
      noise_seed: the seed of the pauses' noise.

    Returns:
      The int16 recording.

    Example:
      >>> parts = [np.full(4, 1000, np.int16), np.full(2, -1000, np.int16)]
      >>> config = CorpusConfig(long_pause_s=3 / SAMPLE_RATE)
      >>> join_with_pauses(parts, config, (0, 0, 0)).size
      9
    """
    pause = round(config.long_pause_s * SAMPLE_RATE)
    speech = np.concatenate(components).astype(np.float64) / 32767.0
    level = float(np.sqrt(np.mean(np.square(speech)))) * 10.0 ** (-config.long_pause_noise_db / 20)
    rng = np.random.default_rng(tuple(noise_seed))
    pieces = []
    for number, component in enumerate(components):
        if number:
            pieces.append(audio_io.to_int16_pcm(level * _noise(pause, "white", rng)))
        pieces.append(np.asarray(component, np.int16))
    return np.concatenate(pieces)


def _write_long(
    staging: str,
    config: CorpusConfig,
    recordings: Sequence[LongRecording],
    test_paths: Mapping[str, str],
) -> dict[str, int]:
    """Writes the long FLACs from the test FLACs and the id mapping; returns sample counts."""
    os.makedirs(os.path.join(staging, "LibriSpeech", LONG), exist_ok=True)
    samples = {}
    for recording in recordings:
        components = [
            audio_io.to_int16_pcm(audio_io.read_audio(test_paths[utterance_id]))
            for utterance_id in recording.components
        ]  # int16 -> float -> int16 is exact (see audio_io)
        waveform = join_with_pauses(components, config, recording.noise_seed)
        directory = os.path.join(staging, recording.relative_dir)
        os.makedirs(directory, exist_ok=True)
        audio_io.write_flac(
            os.path.join(directory, f"{recording.utterance_id}.flac"), waveform, SAMPLE_RATE
        )
        samples[recording.utterance_id] = int(waveform.size)
    mapping = {recording.utterance_id: list(recording.components) for recording in recordings}
    with open(os.path.join(staging, LONG_MAPPING_NAME), "w", encoding="utf-8") as mapping_file:
        json.dump(mapping, mapping_file, indent=1)
    return samples


def read_long_recordings(root: str) -> dict[str, list[str]]:
    """Long recording id -> its test utterance ids, in order, from a built tree.

    Example:
      >>> read_long_recordings("/tmp/spoken")  # doctest: +SKIP
      {'901-4-0000': ['901-3-0000', '901-3-0001', ...], ...}
    """
    with open(os.path.join(root, LONG_MAPPING_NAME), encoding="utf-8") as mapping_file:
        return json.load(mapping_file)


# -------------------------------------------------------------- the tree


def _render_all(jobs: Sequence[tuple[UtterancePlan, str]], num_workers: int) -> Iterator[int]:
    """Renders `jobs` into their FLAC files; yields their sample counts in order.

    Workers are threads, each with its own `EspeakSynthesizer`, whose helper
    process (a fresh fork per utterance) does the synthesis: the CPU-heavy
    part runs in separate processes anyway, and resampling, FFTs and FLAC
    encoding release the GIL, so threads use every core (measured 2.1x on
    2 cores) without multiprocessing's costs: no re-import of the caller's
    `__main__` (a spawn pool hangs when that script is unguarded) and no
    fork of a parent that runs TensorFlow's threads.
    """
    local = threading.local()
    synthesizers: list[EspeakSynthesizer] = []
    lock = threading.Lock()

    def render(job: tuple[UtterancePlan, str]) -> int:
        synthesizer = getattr(local, "synthesizer", None)
        if synthesizer is None:
            synthesizer = local.synthesizer = EspeakSynthesizer()
            with lock:
                synthesizers.append(synthesizer)
        plan, path = job
        waveform = render_utterance(plan, synthesizer)
        audio_io.write_flac(path, waveform, SAMPLE_RATE)
        return int(waveform.size)

    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, num_workers)) as executor:
            # Submitted in bounded windows, so an error stops the run early
            # instead of after every remaining job.
            window = 64 * max(1, num_workers)
            for start in range(0, len(jobs), window):
                yield from executor.map(render, jobs[start : start + window])
    finally:
        for synthesizer in synthesizers:
            synthesizer.close()


@dataclasses.dataclass
class CorpusSummary:
    """What a corpus tree holds.

    Attributes:
      utterances: split -> number of utterances (long: of long recordings).
      audio_seconds: split -> total audio duration (long: the test audio
        again, plus the pauses).
      reused: the tree existed with the same parameters and was kept.
    """

    utterances: dict[str, int]
    audio_seconds: dict[str, float]
    reused: bool = False


def read_marker(root: str) -> dict | None:
    """The marker of the tree at `root`, or None if it is missing or unreadable."""
    try:
        with open(os.path.join(root, MARKER_NAME), encoding="utf-8") as marker:
            return json.load(marker)
    except (OSError, ValueError):
        return None


def corpus_is_complete(root: str, config: CorpusConfig) -> bool:
    """Whether `root` holds a finished tree made with exactly `config`."""
    marker = read_marker(root)
    return marker is not None and marker.get("parameters") == config.parameters()


def _default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _write_text_files(
    staging: str,
    plans: Mapping[str, Sequence[UtterancePlan | LongRecording]],
    samples: Mapping[str, int],
) -> None:
    """trans.txt per chapter, and LibriSpeech's SPEAKERS.TXT naming the voices."""
    chapters: dict[str, list[str]] = {}
    for split_plans in plans.values():
        for plan in split_plans:
            name = f"{plan.speaker_id}-{plan.chapter_id}.trans.txt"
            chapters.setdefault(os.path.join(plan.relative_dir, name), []).append(
                f"{plan.utterance_id} {plan.text}\n"
            )
    for path, lines in chapters.items():
        with open(os.path.join(staging, path), "w", encoding="utf-8") as transcript:
            transcript.writelines(lines)
    minutes: dict[tuple[int, str, str], float] = {}
    for split, split_plans in plans.items():
        for plan in split_plans:
            key = (plan.speaker_id, split, plan.voice)
            minutes[key] = minutes.get(key, 0.0) + samples[plan.utterance_id] / SAMPLE_RATE / 60
    with open(os.path.join(staging, "LibriSpeech", "SPEAKERS.TXT"), "w", encoding="utf-8") as f:
        f.write("; Synthesized by eSpeak NG: NAME is the voice (accent+variant).\n")
        f.write(";ID  |SEX| SUBSET           |MINUTES| NAME\n")
        for (speaker, split, voice), total in sorted(minutes.items()):
            sex = "F" if voice.split("+")[-1] in ("f1", "f2", "f3", "f4", "f5") else "M"
            f.write(f"{speaker:<5}| {sex} | {split:<17}| {total:5.2f} | {voice}\n")


def build_corpus(root: str, config: CorpusConfig, num_workers: int | None = None) -> CorpusSummary:
    """Synthesizes the corpus into a LibriSpeech-layout tree at `root`, atomically.

    A tree at `root` whose marker holds the same parameters is kept as is;
    one with other parameters (or no marker) is replaced.

    Args:
      root: the tree's directory; `root/LibriSpeech/<split>/...` is written.
      config: the corpus parameters.
      num_workers: synthesis workers (each with its own eSpeak NG process);
        default one per available CPU.

    Returns:
      The tree's `CorpusSummary`.

    Raises:
      EspeakError: eSpeak NG is missing, or a voice does not exist.

    Example:
      >>> build_corpus("/tmp/spoken", CorpusConfig())  # doctest: +SKIP
      CorpusSummary(utterances={"train": 5000, ...}, ..., reused=False)
    """
    root = os.path.abspath(root)
    if corpus_is_complete(root, config):
        summary = read_marker(root)["summary"]
        return CorpusSummary(summary["utterances"], summary["audio_seconds"], reused=True)
    _check_voices(config)
    plans = plan_corpus(config)
    # A fixed staging name: an interrupted run's leftovers are cleared here.
    staging = root + ".incomplete"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        jobs = []
        for split_plans in plans.values():
            for plan in split_plans:
                directory = os.path.join(staging, plan.relative_dir)
                os.makedirs(directory, exist_ok=True)
                jobs.append((plan, os.path.join(directory, f"{plan.utterance_id}.flac")))
        num_workers = num_workers or _default_workers()
        logging.info(
            "Synthesizing %d utterances with eSpeak NG in %d workers into %s.",
            len(jobs), num_workers, root,
        )  # fmt: skip
        samples = {
            plan.utterance_id: count
            for (plan, _), count in zip(jobs, _render_all(jobs, num_workers), strict=True)
        }
        # The long subset, from the test FLACs just written (no synthesis).
        first_chapter = 1 + max((p.chapter_id for ps in plans.values() for p in ps), default=0)
        long_recordings = plan_long(config, plans["test"], samples, first_chapter)
        test_paths = {plan.utterance_id: path for plan, path in jobs if plan.subset == "test"}
        samples.update(_write_long(staging, config, long_recordings, test_paths))
        plans = {**plans, LONG: long_recordings}
        _write_text_files(staging, plans, samples)
        summary = CorpusSummary(
            utterances={split: len(split_plans) for split, split_plans in plans.items()},
            audio_seconds={
                split: round(sum(samples[p.utterance_id] for p in split_plans) / SAMPLE_RATE, 3)
                for split, split_plans in plans.items()
            },
        )
        # The marker last, then the rename: only a finished tree has one.
        marker = {
            "parameters": config.parameters(),
            "summary": {"utterances": summary.utterances, "audio_seconds": summary.audio_seconds},
        }
        with open(os.path.join(staging, MARKER_NAME), "w", encoding="utf-8") as marker_file:
            json.dump(marker, marker_file, indent=1, sort_keys=True)
            marker_file.flush()
            os.fsync(marker_file.fileno())
        _replace_directory(staging, root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return summary


def _replace_directory(new: str, target: str) -> None:
    """Moves `new` to `target`, replacing (then deleting) any old `target`."""
    stale = target + ".stale"
    shutil.rmtree(stale, ignore_errors=True)
    if os.path.lexists(target):
        os.rename(target, stale)
    os.rename(new, target)
    shutil.rmtree(stale, ignore_errors=True)


def _check_voices(config: CorpusConfig) -> None:
    """Fails early, with the available names, on a voice eSpeak NG lacks."""
    with EspeakSynthesizer() as synthesizer:
        for voice in (*config.train_voices, *config.test_voices):
            # Synthesizing one word resolves the voice and variant, raising
            # UnknownVoiceError (which lists the choices) before any worker starts.
            synthesizer.synthesize("a", voice=voice)
