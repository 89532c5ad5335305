"""Tests for t2t_lite.data.librispeech_reader: real LibriSpeech files, bad files
made here, hostile archives, and downloads from a loopback HTTP server."""

from __future__ import annotations

import io
import os
import pathlib
import shutil
import socket
import tarfile

import numpy as np
import pytest
import soundfile

from t2t_lite.data import librispeech_reader as reader
from t2t_lite.data.problem import DataError, SplitReport

# The repository is cloned with shared/ beside it (here and in CI).
MINI = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "librispeech_mini"
SUBSETS = ["train-clean-100", "test-clean", "test-other"]


def _trans_lines(subset: str) -> dict[str, str]:
    lines = {}
    for path in sorted((MINI / "LibriSpeech" / subset).rglob("*.trans.txt")):
        for line in path.read_text("utf-8").splitlines():
            utterance_id, text = line.split(" ", 1)
            lines[utterance_id] = text
    return lines


# -- reading a tree ---------------------------------------------------------------------


@pytest.mark.parametrize("root", [MINI, MINI / "LibriSpeech"], ids=["parent", "LibriSpeech"])
def test_reads_real_tree_in_order_matching_flac_and_transcripts(root):
    report = SplitReport()
    utterances = list(reader.read_librispeech_tree(root, SUBSETS, report, workers=2))
    expected = {}
    for subset in SUBSETS:
        expected.update(_trans_lines(subset))
    # Subsets in the order given, then sorted ids: deterministic.
    assert [u.utterance_id for u in utterances] == [
        "1034-121119-0022",
        "1034-121119-0046",
        "1089-134691-0000",
        "2033-164915-0001",
    ]
    assert not report.skipped
    for utterance in utterances:
        assert utterance.transcript == expected[utterance.utterance_id]  # upper case kept
        flac = next((MINI / "LibriSpeech").rglob(f"{utterance.utterance_id}.flac"))
        pcm, rate = soundfile.read(flac, dtype="int16")
        assert rate == 16000 and utterance.waveform.dtype == np.float32
        np.testing.assert_allclose(utterance.waveform, pcm / 32767.0, atol=1 / 32767)


def test_order_does_not_depend_on_the_number_of_workers():
    def ids(workers):
        utterances = reader.read_librispeech_tree(MINI, SUBSETS[::-1], SplitReport(), workers)
        return [(u.utterance_id, u.waveform.tobytes()) for u in utterances]

    assert ids(1) == ids(2)
    assert ids(1)[0][0] == "2033-164915-0001"  # test-other first, as asked


def _bad_tree(root: pathlib.Path) -> pathlib.Path:
    """One chapter with one good FLAC, one good WAV and one of each bad case."""
    chapter = root / "LibriSpeech" / "test-clean" / "1089" / "134691"
    chapter.mkdir(parents=True)
    good = MINI / "LibriSpeech/test-clean/1089/134691/1089-134691-0000.flac"
    shutil.copy(good, chapter / "1089-134691-0000.flac")
    (chapter / "1089-134691-0001.flac").write_bytes(b"fLaC this is not a real FLAC stream" * 10)
    (chapter / "1089-134691-0002.flac").write_bytes(b"")  # zero-length
    # 0003: a transcript line, no audio.
    shutil.copy(good, chapter / "1089-134691-0004.flac")  # audio, no transcript line
    shutil.copy(good, chapter / "1089-134691-0005.flac")  # its line is not UTF-8
    tone = (0.3 * np.sin(np.arange(8000) / 5.0)).astype(np.float32)
    soundfile.write(chapter / "1089-134691-0006.wav", tone, 16000, subtype="PCM_16")
    (chapter / "1089-134691.trans.txt").write_bytes(
        b"1089-134691-0000 HE COULD WAIT NO LONGER\n"
        b"1089-134691-0001 CORRUPT AUDIO\n"
        b"1089-134691-0002 EMPTY AUDIO\n"
        b"1089-134691-0003 NO AUDIO FOR THIS LINE\n"
        b"1089-134691-0005 CAF\xe9 IN LATIN-1\n"
        b"1089-134691-0006 A WAVE FILE\n"
    )
    return root


def test_bad_inputs_are_skipped_and_counted(tmp_path):
    report = SplitReport()
    utterances = list(
        reader.read_librispeech_tree(_bad_tree(tmp_path), ["test-clean"], report, workers=2)
    )
    assert [(u.utterance_id, u.transcript) for u in utterances] == [
        ("1089-134691-0000", "HE COULD WAIT NO LONGER"),
        ("1089-134691-0006", "A WAVE FILE"),
    ]
    assert report.skipped == {
        "corrupt audio": 1,
        "empty audio": 1,
        "transcript line with no audio": 1,
        "audio with no transcript": 1,
        "non-UTF-8 transcript": 1,
    }


def test_missing_subset_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="'dev-clean' is not in .*extract dev-clean.tar.gz"):
        list(reader.read_librispeech_tree(MINI, ["dev-clean"], SplitReport()))


# -- safe extraction ----------------------------------------------------------------------


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
        reader.safe_extract_tar(archive, target)
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
    reader.safe_extract_tar(archive, target)
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
        reader.safe_extract_tar(archive, other)
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
        reader.safe_extract_tar(archive, target)
    assert archive in str(error.value) and member_name in str(error.value)
    assert _tree(target) == {"kept.txt"}
    assert _tree(outside) == set()


def test_refuses_writing_through_an_in_archive_symlink(tmp_path):
    # `up -> .` is harmless alone, but `up/../x` then lands outside the target.
    archive = _tar(tmp_path / "sneaky.tar.gz", [_link("up", "."), _file("up/../x.txt")])
    with pytest.raises(DataError, match="up/../x.txt"):
        reader.safe_extract_tar(archive, tmp_path / "raw")
    archive = _tar(tmp_path / "sneaky2.tar.gz", [_link("dir", "sub"), _file("dir/x.txt")])
    with pytest.raises(DataError, match="through a symbolic link"):
        reader.safe_extract_tar(archive, tmp_path / "raw")
    assert _tree(tmp_path / "raw") == set()


def test_truncated_archive_is_a_clear_error(tmp_path):
    archive = _tar(tmp_path / "a.tar.gz", [_file("LibriSpeech/x.txt", os.urandom(50000))])
    data = pathlib.Path(archive).read_bytes()
    pathlib.Path(archive).write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="damaged or incomplete"):
        reader.safe_extract_tar(archive, tmp_path / "raw")
    assert _tree(tmp_path / "raw") == set()


# -- resumable download ---------------------------------------------------------------------


CONTENT = os.urandom(300_000)


def test_download_complete_file(tmp_path, file_server):
    with file_server({"/f.tar.gz": CONTENT}) as server:
        path = reader.download(f"{server.url}/f.tar.gz", tmp_path / "f.tar.gz")
    assert pathlib.Path(path).read_bytes() == CONTENT
    assert server.requests == [("/f.tar.gz", None)]
    assert sorted(os.listdir(tmp_path)) == ["f.tar.gz"]


def test_download_resumes_an_interrupted_transfer_with_range(tmp_path, file_server):
    with file_server({"/f.tar.gz": CONTENT}, cut_first={"/f.tar.gz"}) as server:
        reader.download(f"{server.url}/f.tar.gz", tmp_path / "f.tar.gz", len(CONTENT))
    assert (tmp_path / "f.tar.gz").read_bytes() == CONTENT
    assert server.requests == [("/f.tar.gz", None), ("/f.tar.gz", f"bytes={len(CONTENT) // 2}-")]
    assert not (tmp_path / "f.tar.gz.partial").exists()


def test_download_resumes_a_partial_file_from_an_earlier_run(tmp_path, file_server):
    (tmp_path / "f.tar.gz.partial").write_bytes(CONTENT[:1000])
    with file_server({"/f.tar.gz": CONTENT}) as server:
        reader.download(f"{server.url}/f.tar.gz", tmp_path / "f.tar.gz")
    assert (tmp_path / "f.tar.gz").read_bytes() == CONTENT
    assert server.requests == [("/f.tar.gz", "bytes=1000-")]


def test_download_restarts_when_the_server_ignores_range(tmp_path, file_server):
    (tmp_path / "f.tar.gz.partial").write_bytes(b"stale bytes of another attempt")
    with file_server({"/f.tar.gz": CONTENT}, honor_range=False) as server:
        reader.download(f"{server.url}/f.tar.gz", tmp_path / "f.tar.gz")
    assert (tmp_path / "f.tar.gz").read_bytes() == CONTENT


def test_download_http_error_names_the_url_and_what_to_do(tmp_path, file_server):
    with file_server({}) as server:
        url = f"{server.url}/missing.tar.gz"
        with pytest.raises(DataError, match=f"{url} failed with HTTP 404.*yourself"):
            reader.download(url, tmp_path / "missing.tar.gz")
    assert os.listdir(tmp_path) == []


def test_download_size_mismatch_and_refused_connection(tmp_path, file_server):
    with file_server({"/f.tar.gz": CONTENT}) as server:
        with pytest.raises(DataError, match="different file"):
            reader.download(f"{server.url}/f.tar.gz", tmp_path / "f.tar.gz", expected_size=5)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(DataError, match=f"127.0.0.1:{port}/f.tar.gz failed"):
        reader.download(f"http://127.0.0.1:{port}/f.tar.gz", tmp_path / "f.tar.gz")
    assert not (tmp_path / "f.tar.gz").exists()
