"""Raw LibriSpeech-layout data: reading a tree, extracting tarballs, downloading.

A LibriSpeech tree is `LibriSpeech/<subset>/<speaker>/<chapter>/` directories,
each with `<speaker>-<chapter>.trans.txt` (lines `UTTERANCE-ID WORDS...`) and
one `<utterance-id>.flac` per line. OpenSLR ships each subset as a tarball
whose members are `LibriSpeech/<subset>/...`. Nothing here knows about
problems or splits, so any corpus written in this layout (the built-in
spoken corpus too) reuses it:

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

import collections
import concurrent.futures
import http.client
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Sequence

import soundfile

from t2t_lite.data import audio_io
from t2t_lite.data.problem import DataError, SplitReport
from t2t_lite.data.speech_problem import Utterance

# Audio extensions in order of preference when one utterance has both.
AUDIO_EXTENSIONS = (".flac", ".wav")
TRANSCRIPT_SUFFIX = ".trans.txt"

SKIP_CORRUPT_AUDIO = "corrupt audio"
SKIP_EMPTY_AUDIO = "empty audio"
SKIP_NO_AUDIO = "transcript line with no audio"
SKIP_NO_TRANSCRIPT = "audio with no transcript"
SKIP_NON_UTF8 = "non-UTF-8 transcript"
SKIP_EMPTY_TRANSCRIPT = "empty transcript"  # the name SpeechRecognitionProblem uses
SKIP_DUPLICATE = "duplicate transcript line"

_MAX_SKIP_MESSAGES = 20  # per call: name the first bad files, count the rest
_TASKS_PER_WORKER = 8  # read-ahead window, bounds the decoded audio held in memory


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- reading a tree -------------------------------------------------------------------


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
      >>> items[0]
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


def _skip_reason(path: str) -> str:
    """Why `read_audio` refused `path`: empty (no samples) or corrupt."""
    try:
        if os.path.getsize(path) == 0 or soundfile.info(path).frames == 0:
            return SKIP_EMPTY_AUDIO
    except (OSError, RuntimeError, soundfile.LibsndfileError):
        pass
    return SKIP_CORRUPT_AUDIO


def _read(path: str) -> object:
    """The waveform of `path`, or the exception that reading it raised."""
    try:
        return audio_io.read_audio(path)
    except (ValueError, OSError, RuntimeError) as error:  # AudioError is a ValueError
        return error


def _read_in_order(paths: Sequence[str], workers: int) -> Iterator[object]:
    """Yields, in the order of `paths`, each file's waveform or exception.

    Threads, not processes: libsndfile decodes with the GIL released (cffi
    releases it around every C call), so threads use every core with no
    pickling of waveforms between processes; a process pool would have to
    spawn (the parent has imported TensorFlow, whose threads make fork
    unsafe) and each spawned child re-imports `__main__` (the datagen CLI,
    hence TensorFlow: ~3.5 s and ~600 MB per child). At most
    `workers * _TASKS_PER_WORKER` files are read ahead (an ordered, bounded
    `imap`), so decoded audio never piles up faster than it is written.
    """
    if workers <= 1 or len(paths) <= 1:
        yield from map(_read, paths)
        return
    window = workers * _TASKS_PER_WORKER
    with concurrent.futures.ThreadPoolExecutor(workers, "read_audio") as pool:
        pending: collections.deque = collections.deque()
        next_index = 0
        while pending or next_index < len(paths):
            while next_index < len(paths) and len(pending) < window:
                pending.append(pool.submit(_read, paths[next_index]))
                next_index += 1
            yield pending.popleft().result()


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
    items = list_utterances(root, subsets, report)
    label = "+".join(subsets)
    total = len(items)
    done = 0
    messages = 0
    paths = [path for _, path, _ in items]
    results = _read_in_order(paths, workers or os.cpu_count() or 1)
    for (utterance_id, path, transcript), waveform in zip(items, results, strict=True):
        done += 1
        if done % progress_every == 0 and done < total:
            _log(f"{label}: {done}/{total} audio files read")
        if isinstance(waveform, Exception):
            reason = _skip_reason(path)
            report.skip(reason)
            messages += 1
            if messages <= _MAX_SKIP_MESSAGES:
                _log(f"skipped {path}: {reason} ({waveform})")
            continue
        yield Utterance(utterance_id=utterance_id, waveform=waveform, transcript=transcript)
    _log(f"{label}: {total}/{total} audio files read")


# -- safe extraction ------------------------------------------------------------------


def _escapes(path: str) -> bool:
    """True if a relative archive path is absolute or has a `..` component."""
    parts = path.replace("\\", "/").split("/")
    return path.startswith(("/", "\\")) or os.path.isabs(path) or ".." in parts


def _check_members(archive: str, members: Iterable[tarfile.TarInfo]) -> None:
    """Raises DataError for the first member that could write outside the target.

    Lexical checks are exact only if no write goes through a symlink and no
    link target climbs with `..`, so both are refused too: a link `a -> .`
    makes the lexically harmless `a/../x` land outside. LibriSpeech archives
    hold only plain files and directories.
    """
    symlinks: set[str] = set()
    for member in members:
        name = member.name.rstrip("/")
        why = None
        parents = name.split("/")
        if _escapes(member.name):
            why = "has an absolute path or a '..' component"
        elif any("/".join(parents[:i]) in symlinks for i in range(1, len(parents))):
            why = "is written through a symbolic link"
        elif member.issym() or member.islnk():
            if _escapes(member.linkname):
                why = f"links to {member.linkname!r}, outside the archive"
            elif member.issym():
                symlinks.add(name)
        elif not (member.isreg() or member.isdir()):
            why = "is a device, FIFO or other special file"
        if why:
            raise DataError(
                f"Refusing to extract {archive}: member {member.name!r} {why}; the "
                "archive is damaged or malicious, delete it and download it again."
            )


def _merge_into(source: str, destination: str) -> None:
    """Moves the tree `source` into `destination`, merging existing directories.

    Whole new subtrees move with one rename (same filesystem); files that
    exist already (LibriSpeech/README.TXT is in every tarball) are replaced.
    An existing symlink to a directory (a user's `LibriSpeech -> /corpora/...`)
    is merged into, not replaced. A file where a directory is (or the other
    way round) is an error rather than a deletion.
    """
    for name in sorted(os.listdir(source)):
        source_path = os.path.join(source, name)
        destination_path = os.path.join(destination, name)
        source_is_dir = os.path.isdir(source_path) and not os.path.islink(source_path)
        if source_is_dir and os.path.isdir(destination_path):
            _merge_into(source_path, destination_path)
        elif source_is_dir == os.path.isdir(destination_path) or not os.path.lexists(
            destination_path
        ):
            os.replace(source_path, destination_path)
        else:
            raise DataError(
                f"Cannot extract {name!r} into {destination}: a "
                f"{'directory' if source_is_dir else 'file'} in the archive would replace "
                f"the existing {'file' if source_is_dir else 'directory'} {destination_path}; "
                "move that away and run again."
            )


def safe_extract_tar(archive: str | os.PathLike, target_dir: str | os.PathLike) -> None:
    """Extracts a (gzipped) tar archive into `target_dir`, refusing unsafe members.

    Every member is checked before anything is written: absolute paths,
    `..` components, writes through symlinks, links leaving the archive and
    device/FIFO members are refused. The archive is then extracted into a
    temporary directory inside `target_dir` (with tarfile's "data" filter as
    a second line of defense, where Python has it) and moved into place, so
    a refused or interrupted extraction leaves nothing half-extracted.

    Checking first means reading a .tar.gz twice (gzip cannot seek); for
    LibriSpeech's largest tarball that is minutes next to the hours it takes
    to read the audio.

    Args:
      archive: a .tar, .tar.gz or .tgz file.
      target_dir: where the members go (created if missing).

    Raises:
      DataError: the archive is unreadable or has an unsafe member; the
        message names the archive and the member.

    Example:
      >>> safe_extract_tar("/raw/test-clean.tar.gz", "/raw")  # doctest: +SKIP
      >>> os.listdir("/raw/LibriSpeech")  # doctest: +SKIP
      ['test-clean', 'README.TXT', ...]
    """
    archive = os.fspath(archive)
    target_dir = os.fspath(target_dir)
    os.makedirs(target_dir, exist_ok=True)
    _log(f"extracting {archive} into {target_dir}")
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            _check_members(archive, members)
            staging = tempfile.mkdtemp(prefix=".extracting-", dir=target_dir)
            try:
                if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 / 3.12
                    tar.extractall(staging, members=members, filter="data")
                else:
                    tar.extractall(staging, members=members)
                _merge_into(staging, target_dir)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    except (tarfile.TarError, EOFError, OSError) as error:
        raise DataError(
            f"Could not extract {archive} ({error}); the file is damaged or incomplete, "
            "delete it and download it again."
        ) from error


# -- resumable download ---------------------------------------------------------------


class _TransferInterrupted(Exception):
    """The connection ended before the whole file arrived (retry with Range)."""


def _total_size(response: http.client.HTTPResponse, offset: int) -> int | None:
    """The full file size from Content-Range (206) or Content-Length (200)."""
    content_range = response.headers.get("Content-Range", "")
    if "/" in content_range and not content_range.endswith("/*"):
        return int(content_range.rsplit("/", 1)[1])
    length = response.headers.get("Content-Length")
    if length is None:
        return None
    return int(length) + (offset if response.status == 206 else 0)


def _range_start(response: http.client.HTTPResponse) -> int:
    """The first byte of a 206 response (`Content-Range: bytes 100-199/200`)."""
    content_range = response.headers.get("Content-Range", "")
    try:
        return int(content_range.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return -1


def _transfer(url: str, partial: str, expected_size: int | None, timeout: float) -> int:
    """One request: appends to (or restarts) `partial`; returns the total size.

    Raises _TransferInterrupted if the body ended early.
    """
    offset = os.path.getsize(partial) if os.path.exists(partial) else 0
    request = urllib.request.Request(url, headers={"User-Agent": "t2t-lite"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # our partial is longer than the file: restart
            os.remove(partial)
            raise _TransferInterrupted("partial file larger than the remote file") from error
        raise
    with response:
        if offset and (response.status != 206 or _range_start(response) != offset):
            offset = 0  # the server ignored Range and sent the whole file: start over
        total = _total_size(response, offset)
        if expected_size is not None and total is not None and total != expected_size:
            raise DataError(
                f"{url} is {total} bytes but {expected_size} were expected; "
                "the URL serves a different file."
            )
        total = expected_size if expected_size is not None else total
        received = offset
        next_report = received + max(total or 0, 1 << 30) // 20
        with open(partial, "ab" if offset else "wb") as handle:
            while chunk := response.read(1 << 20):
                handle.write(chunk)
                received += len(chunk)
                if received >= next_report:
                    _log(f"{os.path.basename(partial)}: {received}/{total or '?'} bytes")
                    next_report = received + max(total or 0, 1 << 30) // 20
    if total is not None and received < total:
        raise _TransferInterrupted(f"got {received} of {total} bytes")
    if total is not None and received > total:
        os.remove(partial)
        raise DataError(f"{url} sent {received} bytes, more than its size {total}.")
    return received


def download(
    url: str,
    path: str | os.PathLike,
    expected_size: int | None = None,
    max_attempts: int = 5,
    timeout: float = 60.0,
    advice: str | None = None,
) -> str:
    """Downloads `url` to `path`, resuming an interrupted download.

    Bytes go to `path + ".partial"`; a later call (or a retry after a broken
    connection, up to `max_attempts` requests) continues from its size with
    an HTTP Range request. A server that ignores Range (answers 200) is read
    from the start again. `path` appears only once the size matches
    `expected_size` (or the server's Content-Length).

    Args:
      url: an http(s) URL.
      path: the destination file; its directory is created if missing.
      expected_size: the size in bytes, if known; a mismatch is an error.
      max_attempts: requests to try while the transfer keeps breaking.
      timeout: seconds to wait for the server on each socket operation.
      advice: what the user should do on failure (appended to the error);
        by default, to put the file at `path` themselves.

    Returns:
      `path`.

    Raises:
      DataError: an HTTP or network error, a size mismatch, or a transfer
        still incomplete after `max_attempts`; names the URL.

    Example:
      >>> download("https://www.openslr.org/resources/12/dev-clean.tar.gz",
      ...          "/raw/dev-clean.tar.gz", expected_size=337926286)  # doctest: +SKIP
      '/raw/dev-clean.tar.gz'
    """
    path = os.fspath(path)
    partial = path + ".partial"
    advice = advice or f"download it yourself to {path} and run again"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    _log(f"downloading {url} to {path}")
    last_problem = "no attempt made"
    for _ in range(max_attempts):
        if expected_size is not None and os.path.exists(partial):
            if os.path.getsize(partial) == expected_size:  # complete, never renamed
                break
        size_before = os.path.getsize(partial) if os.path.exists(partial) else 0
        try:
            _transfer(url, partial, expected_size, timeout)
        except _TransferInterrupted as problem:
            last_problem = str(problem)
            _log(f"{url}: transfer interrupted ({problem}); resuming")
            continue
        except urllib.error.HTTPError as error:
            raise DataError(
                f"Downloading {url} failed with HTTP {error.code} ({error.reason}); {advice}."
            ) from error
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            # A connection broken mid-body resumes; one that delivered nothing
            # is a network problem retrying at once will not fix.
            if os.path.exists(partial) and os.path.getsize(partial) > size_before:
                last_problem = str(error)
                _log(f"{url}: transfer interrupted ({error}); resuming")
                continue
            reason = getattr(error, "reason", error)
            raise DataError(f"Downloading {url} failed ({reason}); {advice}.") from error
        break
    else:
        raise DataError(
            f"Downloading {url} did not complete after {max_attempts} attempts "
            f"({last_problem}); run again to resume from {partial}, or {advice}."
        )
    os.replace(partial, path)
    return path
