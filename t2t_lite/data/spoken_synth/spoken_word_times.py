"""When each word of the spoken corpus is said: the ground truth of word timestamps.

eSpeak NG tells where each word and phoneme starts in its output
(`espeak.WordEvent`); `word_starts` gives each transcript word its first
phoneme's sample, and `locate_words` turns those into each word's start and
end in an utterance's final 16 kHz audio. A word's start, mapped to 16 kHz,
opens its window, which the next word's start closes (the last word's, the
end of the speech). Within the window, tiled from its start in
`SOUNDING_BLOCK_S` blocks, the word starts at the first sounding block and
ends at the end of the last one; a block sounds when its peak exceeds
`SOUNDING_LEVEL` of the utterance's speech peak, measured on the clean
speech before any noise. So the pause eSpeak NG leaves before a word (or
after the last) is not part of it. Times are whole 16 kHz samples, in
seconds.

A long recording's words are its components' words, shifted
(`shift_word_times`) by where each component starts in it.

Example:
    >>> from t2t_lite.data.spoken_synth.espeak import WordEvent
    >>> speech = np.zeros(1600)
    >>> speech[100:300] = speech[900:1500] = 0.5  # two words, silence around
    >>> starts = word_starts("hi you", [WordEvent(0, 2, 0), WordEvent(3, 3, 800)], None)
    >>> locate_words(starts, 16000, speech, lead_samples=160)
    [WordTime(word='hi', start_s=0.015, end_s=0.03),
     WordTime(word='you', start_s=0.065, end_s=0.105)]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from t2t_lite.data.audio_io import SAMPLE_RATE
from t2t_lite.data.spoken_synth.espeak import WordEvent

SOUNDING_BLOCK_S = 0.005  # the resolution of the refined starts and ends
SOUNDING_LEVEL = 0.01  # a block sounds above this share of the speech's peak


class WordTime(NamedTuple):
    """One word and when it is said, in seconds from the start of its audio."""

    word: str
    start_s: float
    end_s: float


class WordMismatchError(ValueError):
    """eSpeak NG's words cannot be matched with the transcript's words.

    A word of the text starts no eSpeak NG word and is not found among the
    phonemes of a multi-word entry, or eSpeak NG split a word (it does for
    numbers and abbreviations, which the corpus grammar has none of).
    """


def _phoneme_name(mnemonic: str) -> str:
    """A phoneme mnemonic without its stress marks ("'A@" and ",A@" are "A@")."""
    return mnemonic.lstrip("'%,=")


def word_starts(
    text: str, events: Sequence[WordEvent], first_phoneme: Callable[[str], str]
) -> list[tuple[str, int]]:
    """Each space-separated word of `text` with the sample where eSpeak NG starts it.

    A word starts at its first phoneme: a word event's own sample is
    sometimes the start of the previous word's last phoneme ("pull" at the
    "l" of "will"). eSpeak NG reads a few pairs as one dictionary entry ("in
    the", "on the", "there are" in the corpus grammar) and reports one event
    for them; each later word of such an entry starts at the entry's first
    phoneme, after the previous word's, that is `first_phoneme(word)` (stress
    marks ignored): "the" at the "D" of "I n D @".

    Args:
      text: the text eSpeak NG spoke, words separated by single spaces.
      events: the `WordEvent`s of that synthesis.
      first_phoneme: word -> the mnemonic of its first phoneme, spoken alone
        by the same voice (asked for merged words only).

    Returns:
      `(word, sample)` per word of `text`, in order; samples at eSpeak NG's rate.

    Raises:
      WordMismatchError: an event starts inside a word, or a merged word's
        first phoneme is not in its entry's phonemes.

    Example:
      >>> events = [WordEvent(0, 2, 0, (("I", 10), ("n", 20), ("D", 30), ("@2", 40)))]
      >>> word_starts("in the", events, {"the": "D"}.get)
      [('in', 10), ('the', 30)]
    """
    words = text.split(" ")
    offsets = [int(start) for start in np.cumsum([0] + [len(word) + 1 for word in words[:-1]])]
    index_of = {offset: index for index, offset in enumerate(offsets)}
    firsts = [index_of.get(event.text_start) for event in events]
    if (
        not events
        or firsts[0] != 0
        or None in firsts
        or any(
            event.text_length != len(words[first])
            for event, first in zip(events, firsts, strict=True)
        )
    ):
        raise WordMismatchError(
            f"eSpeak NG spoke {text!r} as the words at (character, length) "
            f"{[(event.text_start, event.text_length) for event in events]}, which do not "
            f"start and span its space-separated words at {offsets}."
        )
    starts = []
    for event, first, end in zip(events, firsts, firsts[1:] + [len(words)], strict=True):
        starts.append((words[first], event.phonemes[0][1] if event.phonemes else event.sample))
        names = [_phoneme_name(name) for name, _ in event.phonemes]
        at = 0  # the index of the previous word's first phoneme
        for word in words[first + 1 : end]:
            wanted = _phoneme_name(first_phoneme(word))
            found = [k for k in range(at + 1, len(names)) if names[k] == wanted]
            if not found:
                raise WordMismatchError(
                    f"eSpeak NG spoke {' '.join(words[first:end])!r} in {text!r} as one word "
                    f"with phonemes {[name for name, _ in event.phonemes]}, and {word!r}'s "
                    f"first phoneme {wanted!r} is not among them."
                )
            at = found[0]
            starts.append((word, event.phonemes[at][1]))
    return starts


def _sounding_span(sounding: np.ndarray, start: int, end: int, block: int) -> tuple[int, int]:
    """The first sounding sample block's start and the last one's end, in [start, end).

    Blocks are tiled from `start`; a window with no sounding block keeps its
    whole extent (never seen on the corpus' voices, which voice every word).
    """
    blocks = np.flatnonzero(
        [sounding[at : min(at + block, end)].any() for at in range(start, end, block)]
    )
    if blocks.size == 0:
        return start, end
    return start + int(blocks[0]) * block, min(start + (int(blocks[-1]) + 1) * block, end)


def locate_words(
    starts: Sequence[tuple[str, int]],
    event_rate: int,
    speech: np.ndarray,
    lead_samples: int,
) -> list[WordTime]:
    """Each word's start and end in an utterance's 16 kHz audio.

    Args:
      starts: `(word, sample)` per word, from `word_starts`.
      event_rate: eSpeak NG's output rate in Hz, the samples' rate.
      speech: the clean speech at 16 kHz (eSpeak NG's output resampled,
        before silence and noise are added).
      lead_samples: the silence before `speech` in the utterance's audio.

    Returns:
      One `WordTime` per word, in order, in the utterance's clock.

    Example:
      >>> speech = np.concatenate([np.zeros(80), np.ones(160)])
      >>> locate_words([("hi", 0)], 16000, speech, lead_samples=0)
      [WordTime(word='hi', start_s=0.005, end_s=0.015)]
    """
    magnitude = np.abs(np.asarray(speech, np.float64))
    sounding = magnitude > SOUNDING_LEVEL * magnitude.max(initial=0.0)
    block = round(SOUNDING_BLOCK_S * SAMPLE_RATE)
    # The resampler is zero-phase, so a sample's time is kept: s / rate.
    firsts = [min(round(sample * SAMPLE_RATE / event_rate), speech.size) for _, sample in starts]
    ends = firsts[1:] + [speech.size]
    times = []
    for (word, _), start, end in zip(starts, firsts, ends, strict=True):
        first, last = _sounding_span(sounding, start, max(start, end), block)
        times.append(
            WordTime(
                word, (lead_samples + first) / SAMPLE_RATE, (lead_samples + last) / SAMPLE_RATE
            )
        )
    return times


def shift_word_times(words: Sequence[WordTime], samples: int) -> list[WordTime]:
    """`words` moved `samples` (at 16 kHz) later, kept on whole samples.

    Example:
      >>> shift_word_times([WordTime("hi", 0.5, 0.75)], 16000)
      [WordTime(word='hi', start_s=1.5, end_s=1.75)]
    """
    return [
        WordTime(
            word,
            (round(start_s * SAMPLE_RATE) + samples) / SAMPLE_RATE,
            (round(end_s * SAMPLE_RATE) + samples) / SAMPLE_RATE,
        )
        for word, start_s, end_s in words
    ]


def write_word_times(path: str, word_times: Mapping[str, Sequence[WordTime]]) -> None:
    """Writes `{utterance id: [[word, start_s, end_s], ...]}` as JSON to `path`."""
    # One utterance a line: readable, and small next to indenting every number.
    lines = [
        f"{json.dumps(utterance_id)}: {json.dumps([list(word) for word in words])}"
        for utterance_id, words in word_times.items()
    ]
    with open(path, "w", encoding="utf-8") as file:
        file.write("{\n" + ",\n".join(lines) + "\n}\n")


def load_word_times(path: str) -> dict[str, list[WordTime]]:
    """Reads a file `write_word_times` wrote: utterance id -> its `WordTime`s.

    Example:
      >>> load_word_times("spoken/word_times.json")["901-3-0000"][0]  # doctest: +SKIP
      WordTime(word='start', start_s=0.1375, end_s=0.4)
    """
    with open(path, encoding="utf-8") as file:
        table = json.load(file)
    return {
        utterance_id: [WordTime(word, float(start), float(end)) for word, start, end in words]
        for utterance_id, words in table.items()
    }
