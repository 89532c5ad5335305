"""Resumable, size-checked HTTP download of one large file, and tfds downloads that fail fast.

`download` resumes interrupted transfers with HTTP Range requests and
reports every failure as a `DataError` naming the URL and what to do;
nothing here knows about a particular corpus (the LibriSpeech problems
fetch OpenSLR's tarballs with it).

`tfds_download_and_prepare` runs a tfds builder's download with a
reachability check first: tfds retries a connection that cannot be made ten
times with backoff (minutes per URL; docs/benchmarks.md, "Figures behind
choices in the code"), printing a warning each time, so an offline user
would wait minutes for a `requests` traceback.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import sys
import urllib.error
import urllib.request

from t2t_lite.data.problem import DataError


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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


# Seconds a tfds download URL's server gets to accept a connection and answer.
REACHABLE_TIMEOUT = 10.0


def check_reachable(url: str, advice: str, timeout: float = REACHABLE_TIMEOUT) -> None:
    """Raises a `DataError` naming `url` unless its server answers at all.

    Any HTTP answer counts (even 404 or 405: the download itself reports
    those); only a connection that cannot be made or a server silent for
    `timeout` seconds fails.

    Args:
      url: an http(s) URL.
      advice: what the user should do instead (ends the message).
      timeout: seconds for the connection and the first answer.

    Raises:
      DataError: "Downloading {url} failed ({reason}); {advice}."
    """
    request = urllib.request.Request(url, headers={"User-Agent": "t2t-lite", "Range": "bytes=0-0"})
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            pass
    except urllib.error.HTTPError:
        return  # the server is there
    except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
        reason = getattr(error, "reason", error)
        if isinstance(reason, socket.timeout):
            reason = f"no answer in {timeout:g} s"
        raise DataError(f"Downloading {url} failed ({reason}); {advice}.") from error


@contextlib.contextmanager
def _tfds_checks_urls_first(advice: str, timeout: float):
    """While active, each URL tfds downloads is checked with `check_reachable` first.

    tfds has no setting for its retries, so its downloader's per-URL method
    is wrapped; where a tfds version lacks that method nothing is checked
    (tfds then fails slowly, but still fails).
    """
    from tensorflow_datasets.core.download import downloader

    original = getattr(downloader._Downloader, "_sync_download", None)
    if original is None:
        yield
        return

    def checked(self, url, *args, **kwargs):
        if str(url).startswith(("http://", "https://")):
            check_reachable(str(url), advice, timeout)
        return original(self, url, *args, **kwargs)

    downloader._Downloader._sync_download = checked
    try:
        yield
    finally:
        downloader._Downloader._sync_download = original


def tfds_download_and_prepare(
    builder, manual_dir: str | None = None, timeout: float = REACHABLE_TIMEOUT
) -> None:
    """`builder.download_and_prepare()`, failing within `timeout` s per URL when offline.

    Files already in `manual_dir` (tfds's manual directory: each named as
    the last part of its URL, as tfds registers them) are used instead of
    downloading them; t2t-lite passes --tmp_dir, where T2T kept raw
    downloads.

    Args:
      builder: a `tfds.core.DatasetBuilder`.
      manual_dir: a directory of files downloaded by hand, or None.
      timeout: seconds each URL's server gets to answer.

    Raises:
      DataError: a URL's server could not be reached; the one-line message
        names the URL and where to put the file instead.
    """
    import tensorflow_datasets as tfds

    where = f"{manual_dir} (--tmp_dir, tfds's manual directory)" if manual_dir else "--tmp_dir"
    advice = f"no network? download the file yourself into {where}, keeping its name, and run again"
    config = tfds.download.DownloadConfig(manual_dir=manual_dir) if manual_dir else None
    with _tfds_checks_urls_first(advice, timeout):
        builder.download_and_prepare(download_config=config)
