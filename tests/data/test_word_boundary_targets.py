"""The word boundary head's targets: word times stored with the audio, carried
through speed perturbation and the edge trim onto the feature frames, and a
run refused when its shards have none."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data.audio_augment import AugmentConfig
from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.problem import EVAL
from t2t_lite.data.speech_features import featurize_with_times
from t2t_lite.data.speech_problem import SpeechRecognitionProblem, Utterance
from t2t_lite.data.word_boundary_targets import check_word_times
from t2t_lite.hparam import create_hparams

WORD_TIMES = ((0.30, 0.62), (0.62, 1.05), (1.20, 1.71))


class TwoRealUtterances(SpeechRecognitionProblem):
    """Two LibriSpeech utterances in train, with word times or without."""

    num_shards = {"train": 1}
    flacs: list = []
    word_times = None

    def utterances(self, data_dir, tmp_dir, split, report):
        for index, flac in enumerate(self.flacs[:2]):
            yield Utterance(
                str(index), read_audio(flac), "A TRANSCRIPT", word_times=self.word_times
            )


class TimedUtterances(TwoRealUtterances):
    word_times = WORD_TIMES


@pytest.fixture(scope="module")
def generated(tmp_path_factory, librispeech_mini):
    flacs = sorted(librispeech_mini.rglob("*.flac"))
    problems = {}
    for problem_class in (TwoRealUtterances, TimedUtterances):
        problem = problem_class()
        problem.flacs = flacs
        data_dir = str(tmp_path_factory.mktemp(problem.name) / "data")
        problem.generate_data(data_dir, data_dir + "/raw")
        problems[problem.name] = (problem, data_dir)
    return problems


def test_a_run_with_a_head_is_refused_when_its_shards_hold_no_word_times(generated):
    problem, data_dir = generated["two_real_utterances"]
    hparams = registry.hparams("transformer_speech_small")
    with pytest.raises(ValueError) as error:
        check_word_times(problem, hparams, data_dir)
    message = str(error.value)
    assert "hold no word times" in message and "word_boundary_loss_weight=0" in message
    assert "\n" not in message
    timed_problem, timed_dir = generated["timed_utterances"]
    check_word_times(timed_problem, hparams, timed_dir)  # no error
    hparams.set_hparam("word_boundary_loss_weight", 0.0)
    check_word_times(problem, hparams, data_dir)  # no head, nothing to check


def test_stored_word_times_become_targets_at_their_frames(generated):
    problem, data_dir = generated["timed_utterances"]
    hparams = create_hparams("transformer_speech_small", "", problem)
    record = next(iter(tf.data.TFRecordDataset(problem.require_data(data_dir, "train"))))
    example = problem.decode_example(record)
    np.testing.assert_allclose(example["word_starts"], [s for s, _ in WORD_TIMES], atol=1e-6)
    features = problem.preprocess_example(example, EVAL, hparams)
    targets = features["word_boundaries"].numpy()
    assert targets.shape == (features["inputs"].shape[0], 2)
    # No edge zeros to cut in this recording: time t is frame (t * 16000 - 200) / 160.
    frames = [
        [round((t * 16000 - 200) / 160) for t in column] for column in zip(*WORD_TIMES, strict=True)
    ]
    assert np.flatnonzero(targets[:, 0]).tolist() == frames[0]
    assert np.flatnonzero(targets[:, 1]).tolist() == sorted(set(frames[1]))


@pytest.mark.parametrize(
    "factor, zeros, pause, lead",
    [(0.9, 0, 0.0, 0.0), (1.1, 0, 0.0, 0.0), (None, 3200, 0.0, 0.0), (1.1, 0, 1.0, 0.0),
     (1.1, 0, 1.0, 1.0)],
)  # fmt: skip
def test_a_moment_keeps_its_frame_through_speed_perturbation_and_the_trim(
    factor, zeros, pause, lead
):
    """A 10 ms burst `at` seconds into the recording: after speed perturbation
    (`factor`), the cut of `zeros` leading exact zeros, a pause appended (with
    `pause` probability) or one put before it (`lead`), its position is
    where the features are loudest."""
    rng = np.random.default_rng(0)
    waveform = np.concatenate([np.zeros(zeros), rng.normal(scale=1e-3, size=16000)])
    waveform = waveform.astype(np.float32)
    at = zeros / 16000 + 0.65
    waveform[int(at * 16000) : int(at * 16000) + 160] += 0.5
    config = FeatureConfig()
    if factor:
        augment = AugmentConfig(speed_factors=(factor,), pause_prob=pause, lead_prob=lead)
        config = dataclasses.replace(config, augment=augment)
    features, positions = featurize_with_times(waveform, [at], config, training=True, seed=3)
    paused = features.shape[0] > 16000 / factor / 160 + 2 if factor else False
    assert paused == (pause == 1.0)
    loudest = int(np.argmax(features.numpy()[:, :, 0].mean(axis=1)))
    expected = (0.65 / (factor or 1.0) * 16000 - 200) / 160
    if lead:  # moved by the pause before: 0.2-1.5 s
        assert expected + 19.5 < positions.numpy()[0] < expected + 150.5
    else:
        assert abs(positions.numpy()[0] - expected) < 0.5
    assert abs(loudest - positions.numpy()[0]) <= 2
