"""Tests for t2t_lite.data.safe_tar: merging archives, and hostile archives."""

from __future__ import annotations

import io
import os
import pathlib
import tarfile

import pytest

from t2t_lite.data.problem import DataError
from t2t_lite.data.safe_tar import safe_extract_tar


def _tar(path: pathlib.Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return str(path)


def _file(name: str, data: bytes = b"data") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def _tree(root: pathlib.Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_extracts_and_merges_archives_sharing_top_level_files(tmp_path):
    target = tmp_path / "raw"
    for subset in ("dev-clean", "dev-other"):
        archive = _tar(
            tmp_path / f"{subset}.tar.gz",
            [
                _file("LibriSpeech/README.TXT", subset.encode()),
                _file(f"LibriSpeech/{subset}/1/2/1-2.trans.txt", b"1-2-0000 HI\n"),
            ],
        )
        safe_extract_tar(archive, target)
    assert _tree(target) == {
        "LibriSpeech",
        "LibriSpeech/README.TXT",
        "LibriSpeech/dev-clean",
        "LibriSpeech/dev-clean/1",
        "LibriSpeech/dev-clean/1/2",
        "LibriSpeech/dev-clean/1/2/1-2.trans.txt",
        "LibriSpeech/dev-other",
        "LibriSpeech/dev-other/1",
        "LibriSpeech/dev-other/1/2",
        "LibriSpeech/dev-other/1/2/1-2.trans.txt",
    }  # and no staging directory left behind
    assert (target / "LibriSpeech/README.TXT").read_bytes() == b"dev-other"


def test_merges_into_a_symlinked_tree_and_never_deletes_on_conflict(tmp_path):
    corpus = tmp_path / "corpus" / "LibriSpeech" / "dev-clean"
    corpus.mkdir(parents=True)
    target = tmp_path / "raw"
    target.mkdir()
    (target / "LibriSpeech").symlink_to(tmp_path / "corpus" / "LibriSpeech")
    archive = _tar(tmp_path / "dev-other.tar.gz", [_file("LibriSpeech/dev-other/a.txt")])
    safe_extract_tar(archive, target)
    assert (target / "LibriSpeech").is_symlink()
    assert _tree(tmp_path / "corpus") == {
        "LibriSpeech",
        "LibriSpeech/dev-clean",
        "LibriSpeech/dev-other",
        "LibriSpeech/dev-other/a.txt",
    }
    # A file where the archive has a directory: an error, and the file stays.
    other = tmp_path / "other"
    other.mkdir()
    (other / "LibriSpeech").write_text("a file")
    with pytest.raises(DataError, match="would replace the existing file"):
        safe_extract_tar(archive, other)
    assert _tree(other) == {"LibriSpeech"}


def _device(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    return info, None


@pytest.mark.parametrize(
    "bad_member, member_name",
    [
        (
            lambda outside: _file("LibriSpeech/../../outside/evil.txt"),
            "LibriSpeech/../../outside/evil.txt",
        ),
        (lambda outside: _file(str(outside / "abs-evil.txt")), "abs-evil.txt"),
        (lambda outside: _link("LibriSpeech/escape", "../../outside"), "LibriSpeech/escape"),
        (lambda outside: _link("LibriSpeech/passwd", "/etc/passwd"), "LibriSpeech/passwd"),
        (
            lambda outside: _link("LibriSpeech/hard", "../outside/x", tarfile.LNKTYPE),
            "LibriSpeech/hard",
        ),
        (lambda outside: _device("LibriSpeech/null"), "LibriSpeech/null"),
    ],
    ids=["dotdot", "absolute", "symlink-out", "symlink-absolute", "hardlink-out", "device"],
)
def test_refuses_unsafe_members_and_writes_nothing(tmp_path, bad_member, member_name):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "raw"
    target.mkdir()
    (target / "kept.txt").write_text("already here")
    # The good member comes first: validation happens before anything is written.
    archive = _tar(
        tmp_path / "evil.tar.gz",
        [_file("LibriSpeech/dev-clean/ok.txt"), bad_member(outside)],
    )
    with pytest.raises(DataError) as error:
        safe_extract_tar(archive, target)
    assert archive in str(error.value) and member_name in str(error.value)
    assert _tree(target) == {"kept.txt"}
    assert _tree(outside) == set()


def test_refuses_writing_through_an_in_archive_symlink(tmp_path):
    # `up -> .` is harmless alone, but `up/../x` then lands outside the target.
    archive = _tar(tmp_path / "sneaky.tar.gz", [_link("up", "."), _file("up/../x.txt")])
    with pytest.raises(DataError, match="up/../x.txt"):
        safe_extract_tar(archive, tmp_path / "raw")
    archive = _tar(tmp_path / "sneaky2.tar.gz", [_link("dir", "sub"), _file("dir/x.txt")])
    with pytest.raises(DataError, match="through a symbolic link"):
        safe_extract_tar(archive, tmp_path / "raw")
    assert _tree(tmp_path / "raw") == set()


def test_truncated_archive_is_a_clear_error(tmp_path):
    archive = _tar(tmp_path / "a.tar.gz", [_file("LibriSpeech/x.txt", os.urandom(50000))])
    data = pathlib.Path(archive).read_bytes()
    pathlib.Path(archive).write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="damaged or incomplete"):
        safe_extract_tar(archive, tmp_path / "raw")
    assert _tree(tmp_path / "raw") == set()
