"""Reading a LibriSpeech-layout tree of transcripts and audio.

A LibriSpeech tree is `LibriSpeech/<subset>/<speaker>/<chapter>/` directories,
each with `<speaker>-<chapter>.trans.txt` (lines `UTTERANCE-ID WORDS...`) and
one `<utterance-id>.flac` per line. OpenSLR ships each subset as a tarball
whose members are `LibriSpeech/<subset>/...` (fetched with
`t2t_lite.data.download`, unpacked with `t2t_lite.data.safe_tar`). Nothing
here knows about problems or splits, so any corpus written in this layout
(the built-in spoken corpus too) reuses it:

    report = SplitReport()
    for utterance in read_librispeech_tree("/raw", ["test-clean"], report):
        ...  # Utterance(utterance_id, waveform float32 16 kHz, transcript)

Transcripts are kept as LibriSpeech writes them (upper case, no
punctuation): Tensor2Tensor's LibriSpeech problems do not lowercase either.

Bad input never stops a run: a corrupt or empty audio file, a transcript
line with no audio, audio with no transcript line, or a non-UTF-8 line is
skipped and counted in `report.skipped` under one of the `SKIP_*` reasons.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from t2t_lite.data.audio_io import AUDIO_EXTENSIONS
from t2t_lite.data.problem import DataError, SplitReport
from t2t_lite.data.speech_problem import Speaker, Utterance
from t2t_lite.data.utterance_files import (  # noqa: F401 (SKIP_*: part of this API)
    SKIP_CORRUPT_AUDIO,
    SKIP_EMPTY_AUDIO,
    UtteranceFile,
    read_utterance_files,
)

TRANSCRIPT_SUFFIX = ".trans.txt"
SPEAKERS_FILE = "SPEAKERS.TXT"
CHAPTERS_FILE = "CHAPTERS.TXT"

SKIP_NO_AUDIO = "transcript line with no audio"
SKIP_NO_TRANSCRIPT = "audio with no transcript"
SKIP_NON_UTF8 = "non-UTF-8 transcript"
SKIP_EMPTY_TRANSCRIPT = "empty transcript"  # the name SpeechRecognitionProblem uses
SKIP_DUPLICATE = "duplicate transcript line"


def librispeech_dir(root: str | os.PathLike) -> str:
    """The `LibriSpeech` directory of `root` (`root` itself if it is one).

    Args:
      root: a directory holding `LibriSpeech/`, or the `LibriSpeech` directory.

    Returns:
      `root/LibriSpeech` if that is a directory, else `root`.
    """
    root = os.fspath(root)
    nested = os.path.join(root, "LibriSpeech")
    return nested if os.path.isdir(nested) else root


def find_subset_dir(root: str | os.PathLike, subset: str) -> str | None:
    """The directory of `subset` under `root` (see `librispeech_dir`), or None."""
    path = os.path.join(librispeech_dir(root), subset)
    return path if os.path.isdir(path) else None


def speaker_id_of(utterance_id: str) -> str:
    """The reader of `utterance_id` (`<speaker>-<chapter>-<n>`): its first field."""
    return utterance_id.split("-", 1)[0]


def _table_rows(root: str | os.PathLike, name: str, min_fields: int) -> Iterator[list[str]]:
    """The fields of each row of one of LibriSpeech's `|` tables.

    `;` starts a comment; a tree without the table gives no rows.
    """
    path = os.path.join(librispeech_dir(root), name)
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = [field.strip() for field in line.split("|")]
            if not line.startswith(";") and len(fields) >= min_fields and fields[0]:
                yield fields


def read_speakers(root: str | os.PathLike) -> dict[str, Speaker]:
    """Reader id -> Speaker (gender "m"/"f", age unknown) from `SPEAKERS.TXT`.

    LibriSpeech's table (`ID | SEX | SUBSET | MINUTES | NAME`, `;` comments)
    sits in the `LibriSpeech` directory; a tree without it gives `{}`.

    Args:
      root: a directory holding `LibriSpeech/`, or the `LibriSpeech` directory.

    Returns:
      Every reader the table lists.

    Example:
      >>> read_speakers("/raw")["19"]  # doctest: +SKIP
      Speaker(speaker_id='19', age=None, gender='f')
    """
    speakers = {}
    for fields in _table_rows(root, SPEAKERS_FILE, min_fields=2):
        gender = fields[1].lower() if fields[1].lower() in ("m", "f") else None
        speakers[fields[0]] = Speaker(fields[0], None, gender)
    return speakers


def chapter_of(utterance_id: str) -> str:
    """The chapter of `utterance_id` (`<speaker>-<chapter>-<n>`): its second field."""
    return utterance_id.split("-")[1]


def read_chapter_books(root: str | os.PathLike) -> dict[str, str]:
    """Chapter id -> the Project Gutenberg number of the book it was read from.

    From `CHAPTERS.TXT` (`ID | READER | MINUTES | SUBSET | PROJ. | BOOK ID |
    ...`, `;` comments); a tree without it gives `{}`.

    Example:
      >>> read_chapter_books("/raw")["198"]  # doctest: +SKIP
      '121'
    """
    rows = _table_rows(root, CHAPTERS_FILE, min_fields=6)
    return {fields[0]: fields[5] for fields in rows if fields[5].isdigit()}


def _parse_transcript_file(path: str, report: SplitReport) -> tuple[dict[str, str], set[str]]:
    """Reads one `.trans.txt`: (id -> transcript, ids of lines that were skipped).

    The skipped ids are returned so their audio is not counted a second time
    as "audio with no transcript".
    """
    transcripts: dict[str, str] = {}
    skipped_ids: set[str] = set()
    with open(path, "rb") as handle:
        for raw_line in handle:
            raw_line = raw_line.strip()
            if not raw_line:
                continue
            raw_id, _, raw_text = raw_line.partition(b" ")
            utterance_id = raw_id.decode("utf-8", errors="replace")
            try:
                text = raw_text.decode("utf-8").strip()
            except UnicodeDecodeError:
                report.skip(SKIP_NON_UTF8)
                skipped_ids.add(utterance_id)
                continue
            if utterance_id in transcripts:
                report.skip(SKIP_DUPLICATE)
                continue
            if not text:
                report.skip(SKIP_EMPTY_TRANSCRIPT)
                skipped_ids.add(utterance_id)
                continue
            transcripts[utterance_id] = text
    return transcripts, skipped_ids


def _index_directory(
    directory: str, filenames: list[str], report: SplitReport
) -> list[tuple[str, str, str]]:
    """Pairs the transcript lines and audio files of one chapter directory."""
    transcripts: dict[str, str] = {}
    skipped_ids: set[str] = set()
    for filename in sorted(filenames):
        if filename.endswith(TRANSCRIPT_SUFFIX):
            found, skipped = _parse_transcript_file(os.path.join(directory, filename), report)
            skipped_ids |= skipped
            for utterance_id, text in found.items():
                if utterance_id in transcripts:
                    report.skip(SKIP_DUPLICATE)
                else:
                    transcripts[utterance_id] = text
    audio: dict[str, str] = {}
    for extension in reversed(AUDIO_EXTENSIONS):  # preferred extension written last
        for filename in filenames:
            if filename.lower().endswith(extension):
                audio[filename[: -len(extension)]] = os.path.join(directory, filename)
    items = []
    for utterance_id in sorted(transcripts.keys() | audio.keys()):
        if utterance_id not in audio:
            report.skip(SKIP_NO_AUDIO)
        elif utterance_id in transcripts:
            items.append((utterance_id, audio[utterance_id], transcripts[utterance_id]))
        elif utterance_id not in skipped_ids:
            report.skip(SKIP_NO_TRANSCRIPT)
    return items


def list_utterances(
    root: str | os.PathLike, subsets: Sequence[str], report: SplitReport
) -> list[tuple[str, str, str]]:
    """Indexes `subsets` without reading audio: `(utterance_id, audio_path, transcript)`.

    Cheap (directory listings and transcript files only); used for progress
    totals and to train vocabularies on transcripts.

    Args:
      root: a directory holding `LibriSpeech/`, or the `LibriSpeech` directory.
      subsets: subset directory names, e.g. `["train-clean-100"]`, in the order
        wanted; within a subset the order is sorted by path.
      report: receives a `skip(reason)` per unusable transcript line or file.

    Returns:
      The usable utterances, in a deterministic order.

    Raises:
      DataError: a subset directory does not exist.

    Example:
      >>> items = list_utterances("/raw", ["test-clean"], SplitReport())  # doctest: +SKIP
      >>> items[0]  # doctest: +SKIP
      ('1089-134691-0000', '/raw/LibriSpeech/test-clean/...', 'HE COULD WAIT NO LONGER')
    """
    items: list[tuple[str, str, str]] = []
    for subset in subsets:
        subset_dir = find_subset_dir(root, subset)
        if subset_dir is None:
            raise DataError(
                f"LibriSpeech subset {subset!r} is not in {librispeech_dir(root)} "
                f"(expected a directory {subset}/ there); extract {subset}.tar.gz "
                "into that directory's parent."
            )
        for directory, dirnames, filenames in os.walk(subset_dir):
            dirnames.sort()  # os.walk visits subdirectories in this (sorted) order
            items.extend(_index_directory(directory, filenames, report))
    return items


def read_librispeech_tree(
    root: str | os.PathLike,
    subsets: Sequence[str],
    report: SplitReport,
    workers: int | None = None,
    progress_every: int = 1000,
) -> Iterator[Utterance]:
    """Yields the utterances of `subsets` of a LibriSpeech-layout tree, in order.

    Audio is decoded by `workers` threads in parallel (reading FLAC is the
    expensive part of datagen), in an order that does not depend on them:
    subsets as given, then sorted speaker/chapter/utterance.
    A progress line `<subsets>: <done>/<total> audio files read` goes to
    stderr every `progress_every` files and at the end.

    Args:
      root: a directory holding `LibriSpeech/`, or the `LibriSpeech` directory.
      subsets: subset directory names, e.g. `["train-clean-100"]`.
      report: counts each skipped utterance under its reason (`SKIP_*`).
      workers: decoding threads; None means `os.cpu_count()`, 1 reads inline.
      progress_every: files between progress lines.

    Returns:
      An iterator of `Utterance` (float32 16 kHz mono waveform in [-1, 1],
      transcript as in the `.trans.txt`, upper case).

    Raises:
      DataError: a subset directory does not exist.

    Example:
      >>> report = SplitReport()
      >>> utterances = list(read_librispeech_tree("/raw", ["test-clean"], report))  # doctest: +SKIP
      >>> utterances[0].transcript, report.skipped  # doctest: +SKIP
      ('HE COULD WAIT NO LONGER', Counter())
    """
    listed = list_utterances(root, subsets, report)
    items = [UtteranceFile(*item) for item in listed]
    yield from read_utterance_files(
        items, report, "+".join(subsets), workers=workers, progress_every=progress_every
    )
