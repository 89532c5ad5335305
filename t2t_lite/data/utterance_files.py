"""Reading a corpus's audio files in parallel, in order, skipping bad ones.

Every corpus reader (LibriSpeech's tree, a Kaldi data directory) first lists
its utterances without touching audio, as `UtteranceFile`s, then hands the
list to `read_utterance_files`, which decodes the files on threads and yields
`Utterance`s in list order. A corrupt or empty file never stops a run: it is
skipped, counted in the `SplitReport` under `SKIP_CORRUPT_AUDIO` or
`SKIP_EMPTY_AUDIO`, and the first few are named on stderr.

    items = [UtteranceFile("u1", "/raw/u1.wav", "HELLO")]
    for utterance in read_utterance_files(items, SplitReport(), label="train"):
        ...
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import os
import sys
from collections.abc import Iterator, Sequence

import soundfile

from t2t_lite.data import audio_io
from t2t_lite.data.audio_io import SAMPLE_RATE
from t2t_lite.data.problem import SplitReport
from t2t_lite.data.speech_problem import Speaker, Utterance

SKIP_CORRUPT_AUDIO = "corrupt audio"
SKIP_EMPTY_AUDIO = "empty audio"

_MAX_SKIP_MESSAGES = 20  # per call: name the first bad files, count the rest
_TASKS_PER_WORKER = 8  # read-ahead window, bounds the decoded audio held in memory


@dataclasses.dataclass(frozen=True)
class UtteranceFile:
    """One utterance as a corpus lists it, before its audio is read.

    Attributes:
      utterance_id: the corpus's id.
      path: the FLAC or WAV file (any sample rate, mono or not).
      transcript: the reference text.
      speaker: who speaks it, where the corpus says.
      start_s / end_s: the part of the file that is the utterance (a Kaldi
        `segments` line); None means the whole file.
    """

    utterance_id: str
    path: str
    transcript: str
    speaker: Speaker | None = None
    start_s: float | None = None
    end_s: float | None = None


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def skip_reason(path: str) -> str:
    """Why `read_audio` refused `path`: empty (no samples) or corrupt."""
    try:
        if os.path.getsize(path) == 0 or soundfile.info(path).frames == 0:
            return SKIP_EMPTY_AUDIO
    except (OSError, RuntimeError, soundfile.LibsndfileError):
        pass
    return SKIP_CORRUPT_AUDIO


def _read(item: UtteranceFile) -> object:
    """The item's 16 kHz waveform (its segment, if it has one), or the exception."""
    try:
        waveform = audio_io.read_audio(item.path)
    except (ValueError, OSError, RuntimeError) as error:  # AudioError is a ValueError
        return error
    if item.start_s is None:
        return waveform
    end = len(waveform) if item.end_s is None else round(item.end_s * SAMPLE_RATE)
    return waveform[round(item.start_s * SAMPLE_RATE) : end]


def _read_in_order(items: Sequence[UtteranceFile], workers: int) -> Iterator[object]:
    """Yields, in the order of `items`, each file's waveform or exception.

    Threads, not processes: libsndfile decodes with the GIL released (cffi
    releases it around every C call), so threads use every core with no
    pickling of waveforms between processes; a process pool would have to
    spawn (the parent has imported TensorFlow, whose threads make fork
    unsafe) and each spawned child re-imports `__main__` (the datagen CLI,
    hence TensorFlow: seconds and hundreds of MB per child). At most
    `workers * _TASKS_PER_WORKER` files are read ahead (an ordered, bounded
    `imap`), so decoded audio never piles up faster than it is written.
    """
    if workers <= 1 or len(items) <= 1:
        yield from map(_read, items)
        return
    window = workers * _TASKS_PER_WORKER
    with concurrent.futures.ThreadPoolExecutor(workers, "read_audio") as pool:
        pending: collections.deque = collections.deque()
        next_index = 0
        while pending or next_index < len(items):
            while next_index < len(items) and len(pending) < window:
                pending.append(pool.submit(_read, items[next_index]))
                next_index += 1
            yield pending.popleft().result()


def read_utterance_files(
    items: Sequence[UtteranceFile],
    report: SplitReport,
    label: str,
    workers: int | None = None,
    progress_every: int = 1000,
) -> Iterator[Utterance]:
    """Yields the utterances of `items` with their audio, in order.

    A progress line `<label>: <done>/<total> audio files read` goes to stderr
    every `progress_every` files and at the end.

    Args:
      items: the utterances to read, in the order wanted.
      report: counts each unreadable file under `SKIP_CORRUPT_AUDIO` or
        `SKIP_EMPTY_AUDIO`.
      label: names the items in progress lines (a subset or split).
      workers: decoding threads; None means `os.cpu_count()`, 1 reads inline.
      progress_every: files between progress lines.

    Returns:
      An iterator of `Utterance` (float32 16 kHz mono waveform in [-1, 1]).

    Example:
      >>> items = [UtteranceFile("u1", "u1.wav", "HELLO")]  # doctest: +SKIP
      >>> [u.transcript for u in read_utterance_files(items, SplitReport(), "x")]  # doctest: +SKIP
      ['HELLO']
    """
    total = len(items)
    messages = 0
    results = _read_in_order(items, workers or os.cpu_count() or 1)
    for done, (item, waveform) in enumerate(zip(items, results, strict=True), start=1):
        if done % progress_every == 0 and done < total:
            _log(f"{label}: {done}/{total} audio files read")
        if isinstance(waveform, Exception):
            reason = skip_reason(item.path)
            report.skip(reason)
            messages += 1
            if messages <= _MAX_SKIP_MESSAGES:
                _log(f"skipped {item.path}: {reason} ({waveform})")
            continue
        yield Utterance(item.utterance_id, waveform, item.transcript, item.speaker)
    _log(f"{label}: {total}/{total} audio files read")
