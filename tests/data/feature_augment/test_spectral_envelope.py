"""Envelope augmentation: one smooth zero-mean curve per utterance, which
per-utterance normalization removes exactly and causal normalization from a
prior does not (what it is for)."""

import dataclasses

import numpy as np
import pytest

from t2t_lite.data.audio_features import delta_delta_reach
from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.causal_normalization import Prior
from t2t_lite.data.feature_augment.spectral_envelope import (
    ENVELOPE_TERMS,
    LOG_PER_DB,
    random_envelope,
)
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.normalization_prior import feature_statistics
from t2t_lite.data.speech_features import featurize_batch


def test_the_envelope_is_smooth_zero_mean_bounded_and_keyed_by_the_seed():
    curve = random_envelope(80, 6.0, seed=5).numpy()
    assert abs(curve.mean()) < 1e-5  # no level change: that is volume's
    assert np.abs(curve).max() <= ENVELOPE_TERMS * 6.0 * LOG_PER_DB
    # Smooth: neighbouring bins differ by at most the cosines' slopes, sum of pi k A / bins.
    slope = np.pi * ENVELOPE_TERMS * (ENVELOPE_TERMS + 1) / 2 * 6.0 * LOG_PER_DB / 80
    assert np.abs(np.diff(curve)).max() <= slope
    np.testing.assert_array_equal(curve, random_envelope(80, 6.0, seed=5).numpy())
    assert not np.allclose(curve, random_envelope(80, 6.0, seed=6).numpy())


@pytest.fixture(scope="module")
def speech(librispeech_flac):
    return read_audio(librispeech_flac)[None]


def featurized(speech, training, **fields):
    config = FeatureConfig(dither=0.0, **fields)
    if config.wants_prior:
        statistics = feature_statistics([speech[0]], config)
        prior = Prior(statistics.mean, statistics.mean_square, config.prior_frames)
        config = dataclasses.replace(config, prior=prior)
    batch, _ = featurize_batch(speech, [speech.shape[1]], config, training=training, seed=[7, 1])
    return batch.numpy()[0]


def test_per_utterance_normalization_removes_it_and_a_causal_prior_does_not(speech):
    plain = featurized(speech, training=False)
    augmented = featurized(speech, training=True, envelope_db=6.0)
    # The static channel, which carries the curve (the deltas move a little:
    # at the edges their filter reads zeros around the utterance, not the curve).
    np.testing.assert_allclose(augmented[:, :, 0], plain[:, :, 0], atol=2e-3)
    causal = {"causal_normalization": True, "prior_frames": 10**6}
    causal_plain = featurized(speech, training=False, **causal)
    causal_augmented = featurized(speech, training=True, envelope_db=6.0, **causal)
    reach = delta_delta_reach()  # past the edges, the deltas of a constant curve are 0
    moved = np.abs(causal_augmented - causal_plain)[reach:-reach].max(axis=0)
    assert moved[:, 0].max() > 0.1  # the static channel carries the curve
    assert moved[:, 1:].max() < 0.05 * moved[:, 0].max()
