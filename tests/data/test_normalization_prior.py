"""The training set's feature statistics (`normalization_prior`): computed from
utterances spread over the training split, kept in the hparams, read back
from the saved run on a resume rather than computed again."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import run_dir
from t2t_lite.data import feature_config, shards
from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.normalization_prior import (
    add_training_prior,
    feature_statistics,
    training_waveforms,
)
from t2t_lite.data.problem import TRAIN
from t2t_lite.data.speech_problem import SpeechRecognitionProblem, Utterance
from t2t_lite.hparam import create_hparams

STREAMING = "audio_causal_normalization=True,audio_normalization_prior_frames=100"


class FourRealUtterances(SpeechRecognitionProblem):
    """The four LibriSpeech utterances, all in train, over two shards."""

    num_shards = {"train": 2}
    flacs: list = []

    def utterances(self, data_dir, tmp_dir, split, report):
        for index, flac in enumerate(self.flacs):
            yield Utterance(str(index), read_audio(flac), "A TRANSCRIPT")


@pytest.fixture(scope="module")
def problem_and_data(tmp_path_factory, librispeech_mini):
    problem = FourRealUtterances()
    problem.flacs = sorted(librispeech_mini.rglob("*.flac"))
    root = tmp_path_factory.mktemp("prior")
    problem.generate_data(str(root / "data"), str(root / "raw"))
    return problem, str(root / "data")


def test_the_prior_is_the_statistics_of_utterances_spread_over_the_training_split(
    problem_and_data, tmp_path
):
    problem, data_dir = problem_and_data
    paths = shards.existing_shards(data_dir, problem.name, TRAIN)
    by_shard = [
        [problem.decode_example(r)["waveform"].numpy() for r in tf.data.TFRecordDataset(path)]
        for path in paths
    ]
    assert len(by_shard) == 2 and all(len(waveforms) == 2 for waveforms in by_shard)
    # Datagen dealt utterances 0, 1, 2, 3 to shards 0, 1, 0, 1; two spread
    # evenly are 0 and 2, not the first two (a corpus comes speaker by speaker).
    spread = list(training_waveforms(problem, data_dir, count=2))
    assert len(spread) == 2
    np.testing.assert_array_equal(spread[0], by_shard[0][0])
    np.testing.assert_array_equal(spread[1], by_shard[0][1])
    assert len(list(training_waveforms(problem, data_dir, count=9))) == 4  # all there are

    hparams = create_hparams("transformer_tiny", STREAMING, problem)
    statistics = add_training_prior(hparams, problem, data_dir, str(tmp_path))
    assert statistics.utterances == 4
    config = FeatureConfig.from_hparams(hparams)
    every = feature_statistics([w for waveforms in by_shard for w in waveforms], config)
    prior = config.prior
    np.testing.assert_allclose(prior.mean, every.mean, rtol=1e-6)
    np.testing.assert_allclose(prior.mean_square, every.mean_square, rtol=1e-6)
    assert prior.mean.shape == (80, 3) and prior.frames == 100


def test_a_resumed_run_reads_the_prior_it_saved(problem_and_data, tmp_path):
    problem, data_dir = problem_and_data
    hparams = create_hparams("transformer_tiny", STREAMING, problem)
    add_training_prior(hparams, problem, data_dir, str(tmp_path))
    run_dir.save_or_check_hparams(str(tmp_path), hparams)
    resumed = create_hparams("transformer_tiny", STREAMING, problem)
    # An empty data_dir: computing again would fail, reading the run does not.
    assert add_training_prior(resumed, problem, str(tmp_path / "none"), str(tmp_path)) is None
    assert resumed == hparams
    run_dir.save_or_check_hparams(str(tmp_path), resumed)  # the resume check passes


def test_a_prior_without_causal_normalization_is_refused(problem_and_data, tmp_path):
    problem, data_dir = problem_and_data
    hparams = create_hparams("transformer_tiny", "audio_normalization_prior_frames=100", problem)
    with pytest.raises(ValueError, match="without audio_causal_normalization"):
        add_training_prior(hparams, problem, data_dir, str(tmp_path))
    assert feature_config.PRIOR_MEAN not in hparams


def test_hparams_without_a_prior_get_none(problem_and_data, tmp_path):
    problem, data_dir = problem_and_data
    hparams = create_hparams("transformer_tiny", "audio_causal_normalization=True", problem)
    assert add_training_prior(hparams, problem, data_dir, str(tmp_path)) is None
    assert feature_config.PRIOR_MEAN not in hparams
