"""Tests for `mini_librispeech`: the fixed reader split of train-clean-5 from
real recordings (`mini_librispeech_mini`), and Kaldi's split (test =
dev-clean-2) from OpenSLR-style tarballs served on loopback."""

from __future__ import annotations

import pathlib
import tarfile

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data import shards
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError
from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.decoding.evaluation.speaker_groups import read_speakers
from t2t_lite.problems import mini_librispeech
from tests.helpers import librispeech_transcripts

SMALL_SHARDS = {TRAIN: 2, EVAL: 1, TEST: 1}


class SmallMiniLibrispeech(mini_librispeech.MiniLibrispeech):
    num_shards = SMALL_SHARDS
    workers = 2


@pytest.fixture(autouse=True)
def no_network(monkeypatch, unreachable_url):
    """Any download not aimed at a test server goes to a port nobody listens on."""
    monkeypatch.setenv(mini_librispeech.URL_ENV, unreachable_url)


def _records(problem, data_dir, split) -> list[dict]:
    paths = shards.existing_shards(str(data_dir), problem.name, split)
    assert len(paths) == problem.num_shards[split]
    return [problem.decode_example(r) for r in tf.data.TFRecordDataset(paths)]


def _ids_by_split(problem, data_dir) -> dict[str, list[str]]:
    return {
        split: sorted(
            r["utterance_id"].numpy().decode() for r in _records(problem, data_dir, split)
        )
        for split in (TRAIN, EVAL, TEST)
    }


def _three(*speaker_chapters: str) -> list[str]:
    return sorted(f"{sc}-{n:04d}" for sc in speaker_chapters for n in range(3))


def test_registered_with_the_fixed_reader_split():
    problem = registry.problem("mini_librispeech")
    assert isinstance(problem, mini_librispeech.MiniLibrispeech)
    assert problem.input_modality == "speech"
    assert mini_librispeech.TEST_SPEAKERS == ("118", "1867", "3242", "3526", "19", "4640")
    assert mini_librispeech.DEV_SPEAKERS == ("6848", "1970")


def test_train_clean_5_alone_is_split_by_reader(tmp_path, mini_librispeech_mini):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "LibriSpeech").symlink_to(mini_librispeech_mini / "LibriSpeech")
    problem = SmallMiniLibrispeech()
    data = tmp_path / "data"
    report = problem.generate_data(str(data), str(raw))
    assert {split: r.written for split, r in report.splits.items()} == {TRAIN: 6, EVAL: 6, TEST: 6}
    assert not any(r.skipped for r in report.splits.values())
    assert _ids_by_split(problem, data) == {
        TRAIN: _three("1088-134315", "7367-86737"),
        EVAL: _three("1970-28415", "6848-252323"),
        TEST: _three("118-47824", "19-198"),
    }
    assert (data / "mini_librispeech-test-source.txt").read_text().strip() == "speakers"

    transcripts = librispeech_transcripts(mini_librispeech_mini / "LibriSpeech")
    for split in (TRAIN, EVAL, TEST):
        for record in _records(problem, data, split):
            utterance_id = record["utterance_id"].numpy().decode()
            flac = next(mini_librispeech_mini.rglob(f"{utterance_id}.flac"))
            pcm, _ = soundfile.read(flac, dtype="int16")
            np.testing.assert_allclose(record["waveform"].numpy(), pcm / 32767.0, atol=1 / 32767)
            transcript = record["transcript"].numpy().decode()
            assert transcript == transcripts[utterance_id].lower()
            assert ByteTextEncoder().decode(record["targets"].numpy()) == transcript
    # Readers and their genders travel with the records (SPEAKERS.TXT; no ages).
    speakers = read_speakers(problem, str(data), TEST)
    assert {u: (s.speaker_id, s.gender, s.age) for u, s in speakers.items()} == {
        **{u: ("118", "m", None) for u in _three("118-47824")},
        **{u: ("19", "f", None) for u in _three("19-198")},
    }


def _tarball(path: pathlib.Path, tree: pathlib.Path, subset: str, readers: dict[str, str]) -> None:
    """An OpenSLR-style `<subset>.tar.gz` of `readers` (reader -> its directory in `tree`)."""
    with tarfile.open(path, "w:gz") as tar:
        tar.add(tree / "SPEAKERS.TXT", "LibriSpeech/SPEAKERS.TXT")
        for reader, directory in readers.items():
            tar.add(tree / directory / reader, f"LibriSpeech/{subset}/{reader}")


def test_with_dev_clean_2_test_is_dev_clean_2_downloaded_from_a_server(
    tmp_path, monkeypatch, file_server, mini_librispeech_mini
):
    tree = mini_librispeech_mini / "LibriSpeech"
    www = tmp_path / "www"
    www.mkdir()
    train_readers = {r: "train-clean-5" for r in ("1088", "7367", "6848", "1970")}
    _tarball(www / "train-clean-5.tar.gz", tree, "train-clean-5", train_readers)
    _tarball(www / "dev-clean-2.tar.gz", tree, "dev-clean-2", {"118": "train-clean-5"})
    files = {f"/{path.name}": path.read_bytes() for path in www.iterdir()}
    raw, data = tmp_path / "raw", tmp_path / "data"
    with file_server(files) as server:
        monkeypatch.setenv(mini_librispeech.URL_ENV, server.url)
        problem = SmallMiniLibrispeech()
        problem.generate_data(str(data), str(raw))
    assert sorted(path for path, _ in server.requests) == [
        "/dev-clean-2.tar.gz",
        "/train-clean-5.tar.gz",
    ]
    assert _ids_by_split(problem, data) == {
        TRAIN: _three("1088-134315", "7367-86737"),
        EVAL: _three("1970-28415", "6848-252323"),
        TEST: _three("118-47824"),
    }
    assert (data / "mini_librispeech-test-source.txt").read_text().strip() == "dev-clean-2"

    # Without dev-clean-2 the same data_dir would get another split: refused
    # (train here would hold the other split's test readers) unless overwritten.
    (raw / "LibriSpeech/dev-clean-2").rename(tmp_path / "moved")
    (raw / "dev-clean-2.tar.gz").unlink()
    for path in shards.existing_shards(str(data), problem.name, TEST):
        pathlib.Path(path).unlink()
    with pytest.raises(DataError, match=r"written with test from 'dev-clean-2'.*--overwrite"):
        problem.generate_data(str(data), str(raw))
    (tmp_path / "moved/118").rename(raw / "LibriSpeech/train-clean-5/118")
    problem.generate_data(str(data), str(raw), overwrite=True)
    assert (data / "mini_librispeech-test-source.txt").read_text().strip() == "speakers"
    assert _ids_by_split(problem, data)[TEST] == _three("118-47824")


def test_nothing_to_read_or_download_is_one_clear_error(tmp_path):
    with pytest.raises(DataError, match=r"download train-clean-5\.tar\.gz from .*resources/31"):
        SmallMiniLibrispeech().generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
