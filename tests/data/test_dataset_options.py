"""Every pipeline t2t-lite reads to its end runs without tf.data's autotuning
thread, whose timed wait stalls the iterator's destruction (`dataset_options`)."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data import shards
from t2t_lite.data.dataset_options import without_autotuning
from t2t_lite.data.normalization_prior import training_waveforms
from t2t_lite.data.problem import TEST, TRAIN
from t2t_lite.data.speech_problem import SpeechRecognitionProblem, Utterance
from t2t_lite.decoding.input_batches import record_text_batches, record_waveform_batches
from t2t_lite.hparam import create_hparams


class Tones(SpeechRecognitionProblem):
    """Three short tones per split, training over two shards."""

    num_shards = {"train": 2, "dev": 1, "test": 1}

    def utterances(self, data_dir, tmp_dir, split, report):
        for index in range(3):
            time = np.arange(1600 * (index + 1)) / 16000
            waveform = 0.1 * np.sin(2 * np.pi * 220 * (index + 1) * time)
            yield Utterance(f"{split}-{index}", waveform.astype(np.float32), "a b")


@pytest.fixture(scope="module")
def tones(tmp_path_factory):
    root = tmp_path_factory.mktemp("tones")
    problem = Tones()
    problem.generate_data(str(root / "data"), str(root / "raw"))
    return problem, str(root / "data")


@pytest.fixture
def iterated(monkeypatch):
    """The autotune setting of every dataset iterated while the test runs."""
    settings = []
    original = tf.data.Dataset.__iter__

    def spy(dataset):
        settings.append(dataset.options().autotune.enabled)
        return original(dataset)

    monkeypatch.setattr(tf.data.Dataset, "__iter__", spy)
    return settings


def test_without_autotuning_keeps_the_elements():
    dataset = tf.data.Dataset.range(5).map(lambda x: x * 2)
    assert tf.data.Dataset.range(5).options().autotune.enabled is not False
    quiet = without_autotuning(dataset)
    assert quiet.options().autotune.enabled is False
    assert [int(x) for x in quiet] == [0, 2, 4, 6, 8]


def test_the_decoders_split_readers_run_without_autotuning(tones, reverse_data, iterated):
    problem, data_dir = tones
    batches = list(record_waveform_batches(problem, data_dir, TEST, batch_size=2))
    assert [len(ids) for *_, ids in batches] == [2, 1]
    text_problem, text_dir = reverse_data
    hparams = create_hparams("transformer_tiny")
    text_problem.add_hparams(hparams)
    assert (
        sum(
            len(b["targets"])
            for b in record_text_batches(text_problem, text_dir, TEST, hparams, 16)
        )
        == 50
    )
    assert iterated and all(setting is False for setting in iterated)


def test_the_prior_and_the_record_reader_run_without_autotuning(tones, iterated):
    problem, data_dir = tones
    assert len(list(training_waveforms(problem, data_dir, count=2))) == 2
    spec = {"targets": tf.io.VarLenFeature(tf.int64)}
    paths = shards.existing_shards(data_dir, problem.name, TRAIN)
    assert len(list(shards.read_examples(paths, spec))) == 3
    assert iterated and all(setting is False for setting in iterated)
