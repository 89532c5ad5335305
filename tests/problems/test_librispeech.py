"""Tests for the LibriSpeech problems: datagen from a real LibriSpeech tree, from
OpenSLR-style tarballs served on loopback, and from tfds's mocked builder."""

from __future__ import annotations

import os
import pathlib
import tarfile

import numpy as np
import pytest
import soundfile
import tensorflow as tf
import tensorflow_datasets as tfds

from t2t_lite import registry
from t2t_lite.data import shards
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError
from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.problems import librispeech
from tests.helpers import librispeech_transcripts

SMALL_SHARDS = {TRAIN: 2, EVAL: 1, TEST: 1}


class MiniLibrispeech(librispeech.LibrispeechCleanSmall):
    """librispeech_clean_small, but dev from test-other: the mini tree has no dev-clean."""

    subsets = {TRAIN: ("train-clean-100",), EVAL: ("test-other",), TEST: ("test-clean",)}
    num_shards = SMALL_SHARDS
    workers = 2


@pytest.fixture(autouse=True)
def no_network(monkeypatch, unreachable_url):
    """Any download not aimed at a test server goes to a port nobody listens on."""
    monkeypatch.setenv(librispeech.URL_ENV, unreachable_url)
    monkeypatch.delenv(librispeech.USE_TFDS_ENV, raising=False)


def _records(problem, data_dir, split) -> list[dict]:
    paths = shards.existing_shards(str(data_dir), problem.name, split)
    assert len(paths) == problem.num_shards[split]
    return [problem.decode_example(r) for r in tf.data.TFRecordDataset(paths)]


def _check_against_flac(mini: pathlib.Path, problem, data_dir, expected_ids: dict[str, list[str]]):
    """Every split holds exactly `expected_ids`, waveforms and text as in the tree."""
    transcripts = librispeech_transcripts(mini / "LibriSpeech")
    for split, ids in expected_ids.items():
        records = _records(problem, data_dir, split)
        assert sorted(r["utterance_id"].numpy().decode() for r in records) == ids
        for record in records:
            utterance_id = record["utterance_id"].numpy().decode()
            flac = next((mini / "LibriSpeech").rglob(f"{utterance_id}.flac"))
            pcm, _ = soundfile.read(flac, dtype="int16")
            np.testing.assert_allclose(record["waveform"].numpy(), pcm / 32767.0, atol=1 / 32767)
            transcript = record["transcript"].numpy().decode()
            assert transcript == transcripts[utterance_id]
            assert ByteTextEncoder().decode(record["targets"].numpy()) == transcript


MINI_IDS = {
    TRAIN: ["1034-121119-0022", "1034-121119-0046"],
    EVAL: ["2033-164915-0001"],
    TEST: ["1089-134691-0000"],
}


def test_registered_names_and_splits_follow_t2t():
    expected = {
        "librispeech": (
            librispeech.TRAIN_SUBSETS,
            ("dev-clean", "dev-other"),
            ("test-clean", "test-other"),
        ),
        "librispeech_clean_small": (("train-clean-100",), ("dev-clean",), ("test-clean",)),
        "librispeech_clean": (
            ("train-clean-100", "train-clean-360"),
            ("dev-clean",),
            ("test-clean",),
        ),
        "librispeech_noisy": (("train-other-500",), ("dev-other",), ("test-other",)),
        "librispeech_train_full_test_clean": (
            librispeech.TRAIN_SUBSETS,
            ("dev-clean",),
            ("test-clean",),
        ),
        "librispeech_train_full_test_other": (
            librispeech.TRAIN_SUBSETS,
            ("dev-other",),
            ("test-other",),
        ),
        "librispeech_sentencepiece": (
            librispeech.TRAIN_SUBSETS,
            ("dev-clean", "dev-other"),
            ("test-clean", "test-other"),
        ),
    }
    assert librispeech.TRAIN_SUBSETS == ("train-clean-100", "train-clean-360", "train-other-500")
    for name, (train, dev, test) in expected.items():
        problem = registry.problem(name)
        assert problem.name == name
        assert problem.subsets == {TRAIN: train, EVAL: dev, TEST: test}
        assert problem.input_modality == "speech"


def test_datagen_from_an_extracted_tree(tmp_path, librispeech_mini):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "LibriSpeech").symlink_to(librispeech_mini / "LibriSpeech")
    problem = MiniLibrispeech()
    report = problem.generate_data(str(tmp_path / "data"), str(raw))
    assert {split: r.written for split, r in report.splits.items()} == {TRAIN: 2, EVAL: 1, TEST: 1}
    assert not any(r.skipped for r in report.splits.values())
    _check_against_flac(librispeech_mini, problem, tmp_path / "data", MINI_IDS)


def test_a_missing_subset_is_one_clear_error(tmp_path, librispeech_mini):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "LibriSpeech").symlink_to(librispeech_mini / "LibriSpeech")
    # dev-clean is not in the tree, no tarball, and the download fails.
    with pytest.raises(DataError, match=r"dev-clean\.tar\.gz failed .* download dev-clean"):
        librispeech.LibrispeechCleanSmall().generate_data(str(tmp_path / "data"), str(raw))


def _pack_subsets(mini: pathlib.Path, directory: pathlib.Path) -> None:
    """OpenSLR-style tarballs of the mini tree: one per subset, `LibriSpeech/<subset>/...`."""
    directory.mkdir()
    for subset in ("train-clean-100", "test-clean", "test-other"):
        with tarfile.open(directory / f"{subset}.tar.gz", "w:gz") as tar:
            tar.add(mini / "SOURCES.txt", "LibriSpeech/README.TXT")
            tar.add(mini / "LibriSpeech" / subset, f"LibriSpeech/{subset}")


def test_datagen_downloads_resumes_and_extracts_tarballs(
    tmp_path, monkeypatch, file_server, librispeech_mini
):
    _pack_subsets(librispeech_mini, tmp_path / "www")
    files = {f"/{path.name}": path.read_bytes() for path in (tmp_path / "www").iterdir()}
    with file_server(files, cut_first={"/train-clean-100.tar.gz"}) as server:
        monkeypatch.setenv(librispeech.URL_ENV, server.url + "/")
        raw = tmp_path / "raw"
        problem = MiniLibrispeech()
        problem.generate_data(str(tmp_path / "data"), str(raw))
    size = (tmp_path / "www/train-clean-100.tar.gz").stat().st_size
    assert server.requests[:2] == [
        ("/train-clean-100.tar.gz", None),
        ("/train-clean-100.tar.gz", f"bytes={size // 2}-"),
    ]
    assert sorted(os.listdir(raw)) == [
        "LibriSpeech",
        "test-clean.tar.gz",
        "test-other.tar.gz",
        "train-clean-100.tar.gz",
    ]
    for name in ("train-clean-100", "test-clean", "test-other"):
        assert (raw / f"{name}.tar.gz").read_bytes() == (
            tmp_path / f"www/{name}.tar.gz"
        ).read_bytes()
    _check_against_flac(librispeech_mini, problem, tmp_path / "data", MINI_IDS)

    # A second run finds the extracted tree and asks the server for nothing.
    server.requests.clear()
    MiniLibrispeech().generate_data(str(tmp_path / "data"), str(raw), overwrite=True)
    assert server.requests == []


def test_tarball_in_tmp_dir_is_used_and_a_hostile_one_refused(tmp_path, librispeech_mini):
    _pack_subsets(librispeech_mini, tmp_path / "www")
    raw = tmp_path / "raw"
    raw.mkdir()
    for subset in ("train-clean-100", "test-other"):
        os.link(tmp_path / f"www/{subset}.tar.gz", raw / f"{subset}.tar.gz")
    with tarfile.open(raw / "test-clean.tar.gz", "w:gz") as tar:
        tar.add(librispeech_mini / "LibriSpeech/test-clean", "LibriSpeech/test-clean")
        tar.add(librispeech_mini / "SOURCES.txt", "LibriSpeech/../../escaped.txt")
    (tmp_path / "data").mkdir()
    before = set(os.listdir(tmp_path))
    with pytest.raises(
        DataError, match=r"test-clean.tar.gz: member 'LibriSpeech/\.\./\.\./escaped"
    ):
        MiniLibrispeech().generate_data(str(tmp_path / "data"), str(raw))
    assert set(os.listdir(tmp_path)) == before  # nothing escaped tmp_dir
    assert not (raw / "LibriSpeech/test-clean").exists()  # nothing half-extracted
    assert not list(raw.glob(".extracting-*"))
    # The splits before the refused one were written from the good tarballs.
    assert shards.existing_shards(str(tmp_path / "data"), MiniLibrispeech().name, TRAIN)
    assert not shards.existing_shards(str(tmp_path / "data"), MiniLibrispeech().name, TEST)


def test_datagen_from_tfds(tmp_path):
    class MiniTfds(MiniLibrispeech):
        use_tfds = True
        tfds_data_dir = str(tmp_path / "tfds")

    problem = MiniTfds()
    with tfds.testing.mock_data(num_examples=4):
        builder = tfds.builder("librispeech", data_dir=problem.tfds_data_dir)
        expected = {}
        for split, subsets in problem.subsets.items():
            dataset = builder.as_dataset(split=librispeech.TFDS_SPLITS[subsets[0]])
            expected[split] = [
                (ex["id"].decode(), ex["speech"], ex["text"].decode())
                for ex in tfds.as_numpy(dataset)
                if ex["speech"].size and ex["text"]  # the mock may make empty ones
            ]
        problem.generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
    for split, examples in expected.items():
        records = _records(problem, tmp_path / "data", split)
        assert len(records) == len(examples) > 0
        got = sorted(
            (
                r["utterance_id"].numpy().decode(),
                r["waveform"].numpy(),
                r["transcript"].numpy().decode(),
            )
            for r in records
        )
        for (got_id, waveform, text), want in zip(got, sorted(examples), strict=True):
            assert (got_id, text) == (want[0], want[2])
            np.testing.assert_allclose(waveform, want[1] / 32767.0, atol=1 / 32767)


def test_env_var_turns_on_tfds(monkeypatch):
    assert not librispeech.Librispeech()._tfds_enabled()
    monkeypatch.setenv(librispeech.USE_TFDS_ENV, "1")
    assert librispeech.Librispeech()._tfds_enabled()


def test_nothing_usable_fails_with_one_clear_message(tmp_path):
    chapter = tmp_path / "raw/LibriSpeech/train-clean-100/1/2"
    chapter.mkdir(parents=True)
    (chapter / "1-2-0000.flac").write_bytes(b"not audio at all")
    (chapter / "1-2-0001.flac").write_bytes(b"")
    (chapter / "1-2.trans.txt").write_text("1-2-0000 BROKEN\n1-2-0001 EMPTY\n1-2-0002 MISSING\n")
    with pytest.raises(DataError) as error:
        MiniLibrispeech().generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
    message = str(error.value)
    assert "train split has no usable example" in message
    assert "'corrupt audio': 1" in message and "'empty audio': 1" in message
    assert "'transcript line with no audio': 1" in message
    assert message.count(". ") == 0 and "\n" not in message  # one sentence
    assert not os.listdir(tmp_path / "data")


def test_sentencepiece_vocab_is_trained_saved_and_reloaded(tmp_path, librispeech_mini):
    class MiniSentencepiece(librispeech.LibrispeechSentencepiece):
        subsets = MiniLibrispeech.subsets
        num_shards = SMALL_SHARDS
        vocab_size = 40

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "LibriSpeech").symlink_to(librispeech_mini / "LibriSpeech")
    problem = MiniSentencepiece()
    problem.generate_data(str(tmp_path / "data"), str(raw))
    vocab = tmp_path / "data" / problem.vocab_filename
    assert problem.vocab_filename == f"vocab.{problem.name}.40.model"
    assert vocab.is_file()
    encoder = problem.feature_encoders(str(tmp_path / "data"))["targets"]
    assert 2 < encoder.vocab_size <= 40
    for split in (TRAIN, EVAL, TEST):
        for record in _records(problem, tmp_path / "data", split):
            targets = record["targets"].numpy()
            assert targets[-1] == 1 and (targets[:-1] > 1).all()  # EOS once, at the end
            if split == TRAIN:  # dev/test may hold letters the vocabulary never saw
                assert encoder.decode(targets) == record["transcript"].numpy().decode()
    # An existing vocabulary is kept when the shards are regenerated.
    stamp = vocab.stat().st_mtime_ns
    problem.generate_data(str(tmp_path / "data"), str(raw), overwrite=True)
    assert vocab.stat().st_mtime_ns == stamp


def test_train_full_test_clean_reads_t2t_shards_when_it_has_none(tmp_path):
    problem = registry.problem("librispeech_train_full_test_clean")
    for name, split in (("librispeech", TRAIN), ("librispeech_clean", EVAL)):
        (tmp_path / f"{name}-{split}-00000-of-00001").write_bytes(b"")
    assert problem.require_data(str(tmp_path), TRAIN) == [
        str(tmp_path / "librispeech-train-00000-of-00001")
    ]
    assert problem.require_data(str(tmp_path), EVAL) == [
        str(tmp_path / "librispeech_clean-dev-00000-of-00001")
    ]
    own = tmp_path / f"{problem.name}-train-00000-of-00001"
    own.write_bytes(b"")
    assert problem.require_data(str(tmp_path), TRAIN) == [str(own)]
    with pytest.raises(DataError, match="t2t-lite-datagen --problem=librispeech_train_full"):
        problem.require_data(str(tmp_path), TEST)
