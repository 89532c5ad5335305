"""VTLP: the frequency axis warped by one factor per utterance, formants
moved by that factor below the knee, the spectrum's ends kept."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.feature_augment.vocal_tract_warp import BOUNDARY_HERTZ, warp_hertz, warp_log_mel
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.speech_features import featurize_batch

EDGES = {"sample_rate": 16000, "lower_edge_hertz": 20.0, "upper_edge_hertz": 8000.0}


@pytest.mark.parametrize("alpha", [0.9, 0.97, 1.0, 1.1])
def test_the_warp_is_linear_below_the_knee_continuous_and_keeps_the_ends(alpha):
    hertz = np.linspace(0.0, 8000.0, 8001, dtype=np.float32)
    warped = warp_hertz(hertz, alpha, nyquist=8000.0).numpy()
    knee = BOUNDARY_HERTZ * min(alpha, 1.0) / alpha
    below = hertz <= knee
    np.testing.assert_allclose(warped[below], alpha * hertz[below], rtol=1e-6)
    assert warped[0] == 0.0 and warped[-1] == pytest.approx(8000.0)
    assert np.all(np.diff(warped) > 0)  # monotonic: no band read twice
    assert np.abs(np.diff(warped)).max() < 1.2  # no jump at the knee (steps of 1 Hz)


def mel_centre_hertz(bins):
    low, high = (1127.0 * np.log1p(f / 700.0) for f in (20.0, 8000.0))
    mel = np.linspace(low, high, bins + 2)[1:-1]
    return 700.0 * np.expm1(mel / 1127.0)


def test_a_formant_moves_by_the_drawn_factor_the_same_in_every_frame():
    centres = mel_centre_hertz(80)
    # A smooth bump at 1 kHz in every frame of two rows (log-mel is smooth
    # along frequency, so reading between bands is exact enough).
    bump = np.exp(-(((centres - 1000.0) / 150.0) ** 2)).astype(np.float32)
    log_mel = np.tile(bump[None, None, :, None], [2, 3, 1, 1])
    warped = warp_log_mel(log_mel, max_warp=0.1, seed=11, **EDGES).numpy()
    for row in warped:
        np.testing.assert_array_equal(row[0], row[2])  # one factor per utterance
    peaks = []
    for row in warped:  # the bump's new centre, from its centroid in Hz
        weights = row[0, :, 0] ** 4
        peaks.append(float((weights * centres).sum() / weights.sum()))
    # Band k reads the input at alpha * centre_k: the bump now sits at 1000 / alpha.
    alphas = [1000.0 / peak for peak in peaks]
    assert all(0.9 - 0.01 <= alpha <= 1.1 + 0.01 for alpha in alphas)
    assert abs(alphas[0] - alphas[1]) > 1e-3  # each row draws its own
    repeat = warp_log_mel(log_mel, max_warp=0.1, seed=11, **EDGES).numpy()
    np.testing.assert_array_equal(warped, repeat)


def test_no_warp_reads_every_band_where_it_is():
    log_mel = tf.random.stateless_uniform([2, 4, 80, 3], seed=[1, 2])
    same = warp_log_mel(log_mel, max_warp=0.0, seed=5, **EDGES)
    np.testing.assert_allclose(same.numpy(), log_mel.numpy(), atol=1e-4)


def test_featurization_warps_in_training_only(librispeech_flac):
    speech = read_audio(librispeech_flac)[None]
    config = FeatureConfig(dither=0.0, vtlp_warp=0.1)

    def features(training):
        batch, _ = featurize_batch(
            speech, [speech.shape[1]], config, training=training, seed=[3, 4]
        )
        return batch.numpy()[0]

    plain, _ = featurize_batch(speech, [speech.shape[1]], FeatureConfig(dither=0.0))
    np.testing.assert_array_equal(features(training=False), plain.numpy()[0])
    assert np.abs(features(training=True) - plain.numpy()[0]).max() > 0.1
