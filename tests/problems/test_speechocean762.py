"""Tests for the speechocean762 problems: datagen from the corpus's own tree
(real audio, `speechocean762_mini`), from its tarball served on loopback, and
with eSpeak NG speaking its training sentences."""

from __future__ import annotations

import os
import tarfile

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data import shards
from t2t_lite.data.kaldi_problem import KaldiSpeechProblem
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError
from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.decoding.evaluation.speaker_groups import read_speakers
from t2t_lite.problems import speechocean762

SMALL_SHARDS = {TRAIN: 2, EVAL: 1, TEST: 1}


class MiniSpeechocean762(speechocean762.Speechocean762):
    """The mini corpus has 4 training speakers: one becomes dev."""

    dev_speakers = 1
    num_shards = SMALL_SHARDS
    workers = 2


class MiniSpeechocean762WithSynth(speechocean762.Speechocean762WithSynth):
    dev_speakers = 1
    num_shards = SMALL_SHARDS
    synth_renderings = 1
    workers = 2


@pytest.fixture(autouse=True)
def no_network(monkeypatch, unreachable_url):
    """Any download not aimed at a test server goes to a port nobody listens on."""
    monkeypatch.setenv(speechocean762.URL_ENV, f"{unreachable_url}/speechocean762.tar.gz")


def _kaldi_table(path) -> dict[str, str]:
    lines = path.read_text("utf-8").splitlines()
    return dict(line.split(maxsplit=1) for line in lines if line.strip())


def _records(problem, data_dir, split) -> list[dict]:
    paths = shards.existing_shards(str(data_dir), problem.name, split)
    assert len(paths) == problem.num_shards[split]
    return [problem.decode_example(r) for r in tf.data.TFRecordDataset(paths)]


def _check_corpus(corpus, problem, data_dir) -> None:
    """Test is the corpus's test; train and dev split its train by speaker;
    every record holds the WAV's samples, its lower-cased text and its speaker."""
    ids = {}
    for split in (TRAIN, EVAL, TEST):
        kaldi = corpus / ("test" if split == TEST else "train")
        texts, utt2spk = _kaldi_table(kaldi / "text"), _kaldi_table(kaldi / "utt2spk")
        ages, wavs = _kaldi_table(kaldi / "spk2age"), _kaldi_table(kaldi / "wav.scp")
        records = _records(problem, data_dir, split)
        ids[split] = {r["utterance_id"].numpy().decode() for r in records}
        for record in records:
            utterance_id = record["utterance_id"].numpy().decode()
            if utterance_id not in texts:  # synthetic (speechocean762_with_synth)
                continue
            transcript = record["transcript"].numpy().decode()
            assert transcript == texts[utterance_id].lower()
            assert ByteTextEncoder().decode(record["targets"].numpy()) == transcript
            assert record["speaker_id"].numpy().decode() == utt2spk[utterance_id]
            assert int(record["speaker_age"]) == int(ages[utt2spk[utterance_id]])
            assert record["speaker_gender"].numpy().decode() in ("m", "f")
            pcm, _ = soundfile.read(corpus / wavs[utterance_id], dtype="int16")
            np.testing.assert_allclose(record["waveform"].numpy(), pcm / 32767.0, atol=1 / 32767)
        if split == TEST:
            assert ids[split] == set(texts)
    train_texts = _kaldi_table(corpus / "train/text")
    assert ids[EVAL] | (ids[TRAIN] & set(train_texts)) == set(train_texts)
    train_speakers = read_speakers(problem, str(data_dir), TRAIN)
    dev_speakers = read_speakers(problem, str(data_dir), EVAL)
    dev_ids = {s.speaker_id for s in dev_speakers.values()}
    assert len(dev_ids) == 1
    assert not dev_ids & {s.speaker_id for s in train_speakers.values()}


def test_datagen_reads_the_extracted_corpus(tmp_path, speechocean762_mini):
    problem = MiniSpeechocean762()
    report = problem.generate_data(str(tmp_path / "data"), str(speechocean762_mini))
    assert report.splits[TEST].written == 10
    assert report.splits[TRAIN].written + report.splits[EVAL].written == 20
    assert not any(split.skipped for split in report.splits.values())
    _check_corpus(speechocean762_mini / "speechocean762", problem, tmp_path / "data")
    # The training records are shuffled, not speaker by speaker.
    speakers = [
        r["speaker_id"].numpy().decode() for r in _records(problem, tmp_path / "data", TRAIN)
    ]
    assert speakers != sorted(speakers)


def test_datagen_downloads_and_extracts_the_tarball(
    tmp_path, monkeypatch, file_server, speechocean762_mini
):
    archive = tmp_path / "speechocean762.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(speechocean762_mini / "speechocean762", arcname="speechocean762")
    payload = archive.read_bytes()
    with file_server(
        {"/101/speechocean762.tar.gz": payload}, cut_first={"/101/speechocean762.tar.gz"}
    ) as server:
        monkeypatch.setenv(speechocean762.URL_ENV, server.url + "/101/speechocean762.tar.gz")
        raw = tmp_path / "raw"
        problem = MiniSpeechocean762()
        problem.generate_data(str(tmp_path / "data"), str(raw))
    # Cut off half way, then resumed where it stopped.
    assert server.requests[1] == ("/101/speechocean762.tar.gz", f"bytes={len(payload) // 2}-")
    assert (raw / "speechocean762.tar.gz").read_bytes() == payload
    _check_corpus(raw / "speechocean762", problem, tmp_path / "data")


def test_a_tarball_without_the_corpus_is_one_sentence(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    with tarfile.open(raw / "speechocean762.tar.gz", "w:gz") as tar:
        other = tmp_path / "other.txt"
        other.write_text("not the corpus")
        tar.add(other, arcname="other.txt")
    with pytest.raises(DataError, match="it is not OpenSLR's speechocean762.tar.gz"):
        MiniSpeechocean762().generate_data(str(tmp_path / "data"), str(raw))


def test_an_unreachable_download_names_what_to_do(tmp_path):
    with pytest.raises(DataError, match="openslr.org/101"):
        MiniSpeechocean762().generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))


def test_too_few_speakers_for_dev_is_one_sentence(tmp_path, speechocean762_mini):
    problem = MiniSpeechocean762()
    problem.dev_speakers = 4
    with pytest.raises(DataError, match="4 training speakers cannot give 4 dev speakers"):
        problem.generate_data(str(tmp_path / "data"), str(speechocean762_mini))


def test_with_synth_adds_espeak_renderings_of_the_training_sentences(tmp_path, speechocean762_mini):
    raw = tmp_path / "raw"
    raw.mkdir()
    os.symlink(speechocean762_mini / "speechocean762", raw / "speechocean762")
    problem = MiniSpeechocean762WithSynth()
    report = problem.generate_data(str(tmp_path / "data"), str(raw))
    real_train = report.splits[TRAIN].written // 2
    assert report.splits[TRAIN].written == 2 * real_train
    assert real_train + report.splits[EVAL].written == 20
    _check_corpus(speechocean762_mini / "speechocean762", problem, tmp_path / "data")
    records = _records(problem, tmp_path / "data", TRAIN)
    real = [r for r in records if r["speaker_id"].numpy()]
    synthetic = [r for r in records if not r["speaker_id"].numpy()]
    assert len(real) == len(synthetic) == real_train
    # eSpeak spoke each real training sentence once, in turn in the voices.
    assert sorted(r["transcript"].numpy() for r in synthetic) == sorted(
        r["transcript"].numpy() for r in real
    )
    assert all(len(r["waveform"]) > 8000 for r in synthetic)


def test_the_problems_are_registered():
    assert isinstance(registry.problem("speechocean762"), speechocean762.Speechocean762)
    assert isinstance(
        registry.problem("speechocean762_with_synth"), speechocean762.Speechocean762WithSynth
    )


class KaldiCorpus(KaldiSpeechProblem):
    """A user's corpus in a few lines: the mini tree's directories, dev given."""

    corpus_dir_name = "speechocean762"
    data_dirs = {TRAIN: "train", EVAL: "test", TEST: "test"}
    num_shards = SMALL_SHARDS


def test_a_kaldi_corpus_in_a_few_lines_and_a_missing_directory(tmp_path, speechocean762_mini):
    report = KaldiCorpus().generate_data(str(tmp_path / "data"), str(speechocean762_mini))
    written = {split: report.splits[split].written for split in (TRAIN, EVAL, TEST)}
    assert written == {TRAIN: 20, EVAL: 10, TEST: 10}
    no_dev = KaldiCorpus()
    no_dev.data_dirs = {TRAIN: "train", TEST: "test"}
    with pytest.raises(DataError, match="no Kaldi directory for its 'dev' split"):
        no_dev.generate_data(str(tmp_path / "data2"), str(speechocean762_mini))
