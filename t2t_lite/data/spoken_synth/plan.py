"""What the spoken corpus holds, decided before any audio exists.

`CorpusConfig` is everything that determines the corpus. `plan_corpus` gives
each utterance of train, dev and test its sentence (`grammar`), voice,
speaking rate, pitch, noise and silences from seeded RNGs, in the main
process, so the whole corpus is a function of the config alone, whatever the
number and order of the workers that render it (`audio`) into a tree
(`corpus`). `partition_long` and `plan_long` then cut the rendered
test utterances, in order, into the recordings of the `long` subset.

Plans carry their LibriSpeech names: one speaker id per voice, chapters of
`utterances_per_chapter` utterances, ids `<speaker>-<chapter>-<index:04d>`.

Example:
    >>> plans = plan_corpus(CorpusConfig(split_sizes={"train": 2, "dev": 1, "test": 1}))
    >>> [plan.utterance_id for plan in plans["train"]]
    ['101-1-0000', '102-2-0000']
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
from collections.abc import Mapping, Sequence

from t2t_lite.data.audio_io import SAMPLE_RATE
from t2t_lite.data.spoken_synth.grammar import grammar_fingerprint, make_sentence

# Bump when the audio (`audio`) or the tree (`corpus`) changes,
# to rebuild old trees (3: the tree records its word times).
FORMAT_VERSION = 3
LONG = "long"  # the subset of long recordings made of consecutive test utterances

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
      train_sentences: sentences train speaks instead of the grammar's, in
        turn (cycled), e.g. a real corpus's training transcripts; empty
        means the grammar. Dev and test still come from the grammar.
      word_times: time each word at synthesis; a corpus of other sentences
        turns it off (eSpeak NG speaks "let's" as two words, so its words
        cannot be timed one to one).
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
    train_sentences: tuple[str, ...] = ()
    word_times: bool = True

    def __post_init__(self) -> None:
        held_out = set(self.test_voices) & set(self.train_voices)
        if held_out:
            raise ValueError(
                f"Test voices must be unheard in training, but {sorted(held_out)} "
                "is in both train_voices and test_voices."
            )
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0 (a NumPy seed), got {self.seed}.")
        if not self.train_voices or (self.split_sizes.get("test", 0) and not self.test_voices):
            raise ValueError(
                "CorpusConfig needs at least one train voice, and a test voice for a test split."
            )
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

    @property
    def long_pause_samples(self) -> int:
        """`long_pause_s` in samples at 16 kHz: the pauses' exact length."""
        return round(self.long_pause_s * SAMPLE_RATE)

    def voices(self, split: str) -> tuple[str, ...]:
        """The voices speaking `split`: the held-out ones for test only."""
        return self.test_voices if split in ("test", LONG) else self.train_voices

    def parameters(self) -> dict:
        """The JSON-able parameters stored in (and compared with) the marker."""
        parameters = dataclasses.asdict(self)
        parameters["split_sizes"] = dict(sorted(self.split_sizes.items()))
        parameters["grammar"] = grammar_fingerprint()
        # The sentences' digest, not the sentences (thousands of them).
        sentences = "\n".join(self.train_sentences).encode("utf-8")
        parameters["train_sentences"] = hashlib.sha256(sentences).hexdigest()
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
    timed: bool = True  # time its words (CorpusConfig.word_times)


SPLITS = ("train", "dev", "test")


def speaker_ids(config: CorpusConfig) -> dict[str, int]:
    """Voice -> LibriSpeech-style speaker id (train voices 101.., test voices 901..)."""
    ids = {voice: 101 + i for i, voice in enumerate(config.train_voices)}
    ids.update({voice: 901 + i for i, voice in enumerate(config.test_voices)})
    return ids


def _split_texts(config: CorpusConfig, split: str, taken: set[str]) -> list[str]:
    """`split`'s sentences; dev and test avoid sentences already in `taken` (train)."""
    if split == "train" and config.train_sentences:
        sentences = config.train_sentences
        return [sentences[i % len(sentences)] for i in range(config.split_sizes.get(split, 0))]
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
                            timed=config.word_times,
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
    pause = config.long_pause_samples
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
