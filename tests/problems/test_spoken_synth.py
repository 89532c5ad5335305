"""Tests for the spoken_synth problem: eSpeak NG corpus -> LibriSpeech reader -> shards."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data.problem import DataError
from t2t_lite.data.spoken_synth import corpus as spoken_corpus
from t2t_lite.data.spoken_synth.espeak import EspeakError
from t2t_lite.data.spoken_synth.spoken_word_times import load_word_times
from t2t_lite.data.text_encoders import EOS_ID, ByteTextEncoder
from t2t_lite.problems.spoken_synth import SpokenSynth


class TinySpokenSynth(SpokenSynth):
    """spoken_synth with a corpus of a few utterances per split."""

    split_sizes = {"train": 12, "dev": 4, "test": 4}
    num_shards = {"train": 2, "dev": 1, "test": 1, "long": 1}
    long_duration_s = (2.0, 6.0)  # a few test utterances per long recording


def _transcripts(tree: str, split: str) -> dict[str, str]:
    """utterance id -> text, read from the tree's trans.txt files."""
    texts = {}
    pattern = os.path.join(tree, "LibriSpeech", split, "*", "*", "*.trans.txt")
    for path in glob.glob(pattern):
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                utterance_id, text = line.rstrip("\n").split(" ", 1)
                texts[utterance_id] = text
    return texts


def _read_shards(problem, data_dir: str, split: str) -> list[dict]:
    paths = problem.require_data(data_dir, split)
    return [
        {name: value.numpy() for name, value in problem.decode_example(record).items()}
        for record in tf.data.TFRecordDataset(paths)
    ]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """(problem, data_dir, tmp_dir, report) after one datagen run."""
    base = tmp_path_factory.mktemp("spoken_synth")
    problem = TinySpokenSynth()
    data_dir, tmp_dir = str(base / "data"), str(base / "raw")
    report = problem.generate_data(data_dir, tmp_dir)
    return problem, data_dir, tmp_dir, report


def test_registered_as_byte_level_speech_problem():
    problem = registry.problem("spoken_synth")
    assert isinstance(problem, SpokenSynth)
    assert problem.input_modality == "speech"
    assert isinstance(problem.feature_encoders("unused")["targets"], ByteTextEncoder)
    assert "wer" in problem.eval_metrics


def test_default_corpus_size_and_held_out_voice():
    problem = SpokenSynth()
    assert 3000 <= problem.split_sizes["train"] <= 5000
    assert problem.split_sizes["dev"] == problem.split_sizes["test"] == 200
    config = problem.corpus_config()
    assert config.test_voices == ("en-us-nyc+f3",)
    assert config.long_duration_s == (20.0, 120.0) and config.long_pause_s == 0.5
    assert problem.splits_to_generate() == ["train", "dev", "test", "long"]
    assert "en-us-nyc+f3" not in config.train_voices


def test_generate_data_writes_shards_matching_the_generated_text(generated):
    problem, data_dir, tmp_dir, report = generated
    tree = problem.corpus_dir(tmp_dir)
    assert tree == os.path.join(tmp_dir, problem.name)
    assert spoken_corpus.corpus_is_complete(tree, problem.corpus_config())
    encoder = ByteTextEncoder()
    for split, size in problem.split_sizes.items():
        assert report.splits[split].written == size
        assert not report.splits[split].skipped
        expected = _transcripts(tree, split)
        examples = _read_shards(problem, data_dir, split)
        assert len(examples) == size == len(expected)
        for example in examples:
            utterance_id = example["utterance_id"].decode()
            transcript = example["transcript"].decode()
            assert transcript == expected[utterance_id]  # lower case, as generated
            assert list(example["targets"]) == encoder.encode(transcript) + [EOS_ID]
            speaker, chapter, _ = utterance_id.split("-")
            flac = os.path.join(
                tree, "LibriSpeech", split, speaker, chapter, utterance_id + ".flac"
            )
            samples, _ = soundfile.read(flac, dtype="int16")
            np.testing.assert_allclose(example["waveform"], samples / 32767.0, atol=1e-6)
    test_speakers = {
        example["utterance_id"].decode().split("-")[0]
        for example in _read_shards(problem, data_dir, "test")
    }
    train_speakers = {
        example["utterance_id"].decode().split("-")[0]
        for split in ("train", "dev")
        for example in _read_shards(problem, data_dir, split)
    }
    assert test_speakers and not test_speakers & train_speakers


def test_rerunning_datagen_reuses_the_tree(generated, tmp_path, monkeypatch):
    problem, _, tmp_dir, _ = generated
    marker = os.path.join(problem.corpus_dir(tmp_dir), spoken_corpus.MARKER_NAME)
    before = os.stat(marker).st_mtime_ns

    def no_synthesis(*args, **kwargs):
        raise AssertionError("datagen synthesized a corpus that was complete")

    monkeypatch.setattr(spoken_corpus, "render_utterance", no_synthesis)
    # A new data_dir: the shards must be written again, from the kept tree.
    report = problem.generate_data(str(tmp_path / "data"), tmp_dir)
    assert report.splits["test"].written == problem.split_sizes["test"]
    assert os.stat(marker).st_mtime_ns == before


def test_missing_espeak_is_a_data_error(tmp_path, monkeypatch):
    def missing(*args, **kwargs):
        raise EspeakError("eSpeak NG is not installed; install it with: pip install x.")

    monkeypatch.setattr(spoken_corpus, "EspeakSynthesizer", missing)
    with pytest.raises(DataError, match="not installed"):
        TinySpokenSynth().generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
    # A subclass answers to its registered parent's name, as in T2T.
    assert TinySpokenSynth().name == "spoken_synth"
    assert not os.path.exists(tmp_path / "raw" / "spoken_synth")


def test_datagen_writes_the_long_split_from_the_test_utterances(generated):
    problem, data_dir, tmp_dir, report = generated
    mapping = spoken_corpus.read_long_recordings(problem.corpus_dir(tmp_dir))
    assert len(mapping) >= 2
    paths = problem.require_data(data_dir, "long")
    assert [os.path.basename(path) for path in paths] == [f"{problem.name}-long-00000-of-00001"]
    assert report.splits["long"].written == len(mapping)
    assert not report.splits["long"].skipped
    tests = {
        example["utterance_id"].decode(): example
        for example in _read_shards(problem, data_dir, "test")
    }
    examples = _read_shards(problem, data_dir, "long")
    assert sorted(example["utterance_id"].decode() for example in examples) == sorted(mapping)
    encoder = ByteTextEncoder()
    for example in examples:
        components = [tests[i] for i in mapping[example["utterance_id"].decode()]]
        transcript = example["transcript"].decode()
        assert transcript == " ".join(c["transcript"].decode() for c in components)
        assert list(example["targets"]) == encoder.encode(transcript) + [EOS_ID]
        # The test records' samples, in order, 0.5 s apart.
        waveform, offset = example["waveform"], 0
        for component in components:
            size = component["waveform"].size
            np.testing.assert_array_equal(waveform[offset : offset + size], component["waveform"])
            offset += size + 8000
        assert waveform.size == offset - 8000
        assert 2.0 <= waveform.size / 16000 <= 6.0


def test_datagen_copies_the_word_times_beside_the_shards(generated):
    problem, data_dir, tmp_dir, _ = generated
    path = problem.word_times_path(data_dir)
    assert path == os.path.join(data_dir, "spoken_synth-word_times.json")
    copied = load_word_times(path)
    assert copied == spoken_corpus.read_word_times(problem.corpus_dir(tmp_dir))
    assert not glob.glob(os.path.join(data_dir, "*.incomplete"))
    for split in [*problem.split_sizes, "long"]:
        for example in _read_shards(problem, data_dir, split):
            words = copied[example["utterance_id"].decode()]
            assert " ".join(word.word for word in words) == example["transcript"].decode()
            assert words[-1].end_s <= example["waveform"].size / 16000
            # And each record carries its word times (the word boundary head's targets).
            np.testing.assert_allclose(example["word_starts"], [w.start_s for w in words], 1e-6)
            np.testing.assert_allclose(example["word_ends"], [w.end_s for w in words], 1e-6)
