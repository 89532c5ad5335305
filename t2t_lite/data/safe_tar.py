"""Safe extraction of (gzipped) tar archives fetched from elsewhere.

`safe_extract_tar` refuses any member that could write outside its target
or is not a plain file, directory or link within the archive, and merges
archives that share files into one tree; nothing here knows about a
particular corpus (the LibriSpeech problems extract OpenSLR's tarballs).
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Iterable

from t2t_lite.data.problem import DataError


def _escapes(path: str) -> bool:
    """True if a relative archive path is absolute or has a `..` component."""
    parts = path.replace("\\", "/").split("/")
    return path.startswith(("/", "\\")) or os.path.isabs(path) or ".." in parts


def _check_members(archive: str, members: Iterable[tarfile.TarInfo]) -> None:
    """Raises DataError for the first member that could write outside the target.

    Lexical checks are exact only if no write goes through a symlink and no
    link target climbs with `..`, so both are refused too: a link `a -> .`
    makes the lexically harmless `a/../x` land outside. Corpus archives
    (LibriSpeech's, say) hold only plain files and directories.
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
    print(f"extracting {archive} into {target_dir}", file=sys.stderr, flush=True)
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
