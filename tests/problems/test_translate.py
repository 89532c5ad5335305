"""Tests for translate_ende_wmt32k: datagen from tfds's mocked wmt14 builder
(no network), the shared SentencePiece vocabulary, and tfds failures."""

from __future__ import annotations

import os

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from t2t_lite import registry
from t2t_lite.data import shards
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError
from t2t_lite.data.text_encoders import EOS_ID, SentencePieceEncoder
from t2t_lite.problems import translate

NUM_MOCK_EXAMPLES = 12


class TinyTranslateEnde(translate.TranslateEndeWmt32k):
    """The real problem with a vocabulary small enough for mock text (random letters)."""

    vocab_size = 40
    num_shards = {TRAIN: 2, EVAL: 1, TEST: 1}


@pytest.fixture
def problem(tmp_path) -> TinyTranslateEnde:
    tiny = TinyTranslateEnde()
    tiny.tfds_data_dir = str(tmp_path / "tfds")
    return tiny


def _mock_pairs(problem, split: str) -> list[tuple[str, str]]:
    """The mocked (English, German) pairs of `split`, read straight from tfds."""
    builder = tfds.builder(problem.tfds_name, data_dir=problem.tfds_data_dir)
    dataset = builder.as_dataset(split=translate.TFDS_SPLITS[split], shuffle_files=False)
    return [(ex["en"].decode(), ex["de"].decode()) for ex in tfds.as_numpy(dataset)]


def _records(problem, data_dir, split) -> list[dict]:
    paths = shards.existing_shards(str(data_dir), problem.name, split)
    assert len(paths) == problem.num_shards[split]
    return [problem.decode_example(r) for r in tf.data.TFRecordDataset(paths)]


def test_registered_with_t2t_numbers():
    problem = registry.problem("translate_ende_wmt32k")
    assert isinstance(problem, translate.TranslateEndeWmt32k)
    assert problem.vocab_filename == "vocab.translate_ende_wmt32k.32768.model"
    assert problem.num_shards == {TRAIN: 100, EVAL: 1, TEST: 1}
    assert "bleu" in problem.eval_metrics
    assert problem.tfds_name == "wmt14_translate/de-en"
    assert translate.TFDS_SPLITS == {TRAIN: "train", EVAL: "validation", TEST: "test"}


def test_datagen_writes_every_split_with_a_shared_vocab(problem, tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    with tfds.testing.mock_data(num_examples=NUM_MOCK_EXAMPLES):
        expected = {split: _mock_pairs(problem, split) for split in translate.TFDS_SPLITS}
        report = problem.generate_data(str(data_dir), str(tmp_path / "raw"))

    vocab = data_dir / problem.vocab_filename
    # The tiny subclass answers to its registered parent's name, as in T2T.
    assert vocab.name == "vocab.translate_ende_wmt32k.40.model" and vocab.exists()
    encoders = problem.feature_encoders(str(data_dir))
    assert encoders["inputs"] is encoders["targets"]
    encoder = encoders["targets"]
    assert isinstance(encoder, SentencePieceEncoder) and encoder.model_path == str(vocab)

    for split, pairs in expected.items():
        # SentencePiece drops edge spaces and collapses runs of them; mock
        # text has both, and pairs with an empty side are skipped.
        kept = sorted(
            (translate.normalize_whitespace(en), translate.normalize_whitespace(de))
            for en, de in pairs
        )
        kept = [pair for pair in kept if all(pair)]
        records = _records(problem, data_dir, split)
        assert report.splits[split].written == len(records) == len(kept) > 0
        decoded = []
        for record in records:
            inputs, targets = record["inputs"].numpy(), record["targets"].numpy()
            assert inputs[-1] == EOS_ID and targets[-1] == EOS_ID
            assert EOS_ID not in inputs[:-1] and EOS_ID not in targets[:-1]
            decoded.append((encoder.decode(inputs), encoder.decode(targets)))
        assert sorted(decoded) == kept  # English inputs, German targets

    # A rerun keeps the vocabulary: no retraining, same file.
    before = vocab.read_bytes(), os.stat(vocab).st_mtime_ns

    def no_training(*args, **kwargs):
        raise AssertionError("the vocabulary was trained again")

    monkeypatch.setattr(translate, "train_sentencepiece", no_training)
    with tfds.testing.mock_data(num_examples=NUM_MOCK_EXAMPLES):
        report = problem.generate_data(str(data_dir), str(tmp_path / "raw"), overwrite=True)
    assert (vocab.read_bytes(), os.stat(vocab).st_mtime_ns) == before
    assert report.splits[TRAIN].written == len(_records(problem, data_dir, TRAIN))


def test_vocab_sample_is_capped_and_has_both_languages(problem):
    problem.vocab_sample_sentences = 5
    with tfds.testing.mock_data(num_examples=NUM_MOCK_EXAMPLES):
        pairs = _mock_pairs(problem, TRAIN)
        texts = list(problem.vocab_texts())
    sentences = [translate.normalize_whitespace(text) for pair in pairs for text in pair]
    assert texts == [s for s in sentences if s][:5]
    english = {translate.normalize_whitespace(en) for en, _ in pairs}
    german = {translate.normalize_whitespace(de) for _, de in pairs}
    assert set(texts) & english and set(texts) & german


def test_tfds_failure_is_one_clear_error_and_writes_nothing(problem, tmp_path, monkeypatch):
    def offline(self, *args, **kwargs):
        raise ConnectionError("statmt.org is unreachable")

    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", offline)
    data_dir = tmp_path / "data"
    with pytest.raises(DataError) as error:
        problem.generate_data(str(data_dir), str(tmp_path / "raw"))
    message = str(error.value)
    assert "wmt14_translate/de-en" in message and problem.tfds_data_dir in message
    assert "statmt.org is unreachable" in message and "GB" in message
    assert not os.listdir(data_dir)  # no vocabulary, no shard


def test_encoders_before_datagen_say_what_to_run(problem, tmp_path):
    with pytest.raises(FileNotFoundError, match="t2t-lite-datagen"):
        problem.feature_encoders(str(tmp_path))


def test_a_module_tfds_lacks_is_named_with_the_install(problem, tmp_path, monkeypatch):
    """tfds 4.9.10 imports importlib_resources only when a builder prepares
    (setup.py installs it); a module missing there says what to install."""

    def missing_module(self, *args, **kwargs):
        raise ModuleNotFoundError(
            "No module named 'importlib_resources'", name="importlib_resources"
        )

    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", missing_module)
    with pytest.raises(DataError) as error:
        problem.generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
    assert str(error.value) == (
        "translate_ende_wmt32k: tensorflow-datasets needs the module 'importlib_resources', "
        "which is not installed: pip install importlib_resources, then run again."
    )


def test_a_multi_line_tfds_error_is_one_line(problem, tmp_path, monkeypatch):
    def wrong_checksum(self, *args, **kwargs):
        raise ValueError("Artifact has wrong checksum:\n* Expected: a\n* Got: b")

    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", wrong_checksum)
    with pytest.raises(DataError) as error:
        problem.generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
    assert "\n" not in str(error.value)
    assert "(ValueError: Artifact has wrong checksum: * Expected: a * Got: b)" in str(error.value)
