"""Causal featurization (hparam audio_causal_normalization): a frame's features
never change when more audio arrives, beyond the streaming look-ahead; the
running statistics start from a training-set prior when the hparams ask."""

import dataclasses

import numpy as np
import pytest

from t2t_lite.data.audio_features import delta_delta_reach
from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.causal_normalization import (
    QUIET_STDS,
    Prior,
    fill_digital_silence_causally,
    normalize_causally,
)
from t2t_lite.data.feature_config import AUDIO_HPARAMS, FeatureConfig, store_prior
from t2t_lite.data.normalization_prior import feature_statistics
from t2t_lite.data.speech_features import featurize_batch
from t2t_lite.hparam import HParams


def features(waveform, causal: bool) -> np.ndarray:
    config = FeatureConfig(causal_normalization=causal)
    batch, lengths = featurize_batch(waveform[None], [len(waveform)], config)
    return batch.numpy()[0, : lengths.numpy()[0]]


@pytest.fixture(scope="module")
def recording(librispeech_flac):
    speech = read_audio(librispeech_flac)
    zeros = np.zeros(4000, np.float32)  # 0.25 s of exact digital silence inside
    return np.concatenate([speech[:16000], zeros, speech[16000:]])


def test_a_prefix_featurizes_as_the_whole_recording_up_to_the_lookahead(recording):
    config = FeatureConfig.from_hparams(HParams(**AUDIO_HPARAMS))
    # A frame's window reaches 3 frames on, and the delta-deltas 4 more.
    lookahead = -(-config.frame_length_samples // config.frame_step_samples) + delta_delta_reach()
    assert lookahead == 3 + 4
    whole = features(recording, causal=True)
    for cut in (8000, 16000 + 2000, 16000 + 4000 + 3000):  # in speech, in the zeros, after
        prefix = features(recording[:cut], causal=True)
        stable = len(prefix) - lookahead
        assert stable > 0
        np.testing.assert_allclose(prefix[:stable], whole[:stable], atol=2e-4)
    # Per-utterance statistics read the whole recording: a prefix differs everywhere.
    plain_prefix = features(recording[:16000], causal=False)
    plain_whole = features(recording, causal=False)
    assert np.abs(plain_prefix[:50] - plain_whole[:50]).max() > 0.01


def test_digital_silence_takes_a_quiet_level_of_the_frames_before_it():
    log_mel = np.array([1.0, 3.0, 2.0, -23.0, -23.0])[None, :, None, None].astype(np.float32)
    silent = np.array([[False, False, False, True, True]])
    filled = fill_digital_silence_causally(log_mel, silent, np.ones((1, 5), bool)).numpy()
    expected = 2.0 - QUIET_STDS * np.std([1.0, 3.0, 2.0])
    np.testing.assert_allclose(filled[0, :, 0, 0], [1, 3, 2, expected, expected], rtol=1e-5)


def test_a_prior_counts_as_frames_before_the_first():
    rng = np.random.default_rng(0)
    before = rng.normal(2.0, 3.0, (1, 40, 4, 3)).astype(np.float32)
    frames = rng.normal(-1.0, 0.5, (1, 9, 4, 3)).astype(np.float32)
    prior = Prior(before[0].mean(0), np.square(before[0]).mean(0), frames=40)
    with_prior = normalize_causally(frames, np.ones((1, 9), bool), prior=prior).numpy()
    joined = np.concatenate([before, frames], axis=1)
    expected = normalize_causally(joined, np.ones((1, 49), bool)).numpy()[:, 40:]
    np.testing.assert_allclose(with_prior, expected, rtol=1e-4, atol=1e-5)


def test_the_utterances_own_statistics_as_a_heavy_prior_give_per_utterance_normalization(
    librispeech_flac,
):
    """Statistics weighing 10^7 frames do not move while the utterance runs,
    so they normalize it as its own whole-utterance statistics do (to the
    variance floors, which differ)."""
    speech = read_audio(librispeech_flac)
    overrides = {"audio_causal_normalization": True, "audio_normalization_prior_frames": 10**7}
    hparams = HParams(**{**AUDIO_HPARAMS, **overrides})
    statistics = feature_statistics([speech], FeatureConfig.from_hparams(hparams))
    assert statistics.utterances == 1 and statistics.frames == len(features(speech, False))
    store_prior(hparams, statistics.mean, statistics.mean_square)  # as the trainer keeps it
    config = FeatureConfig.from_hparams(hparams)
    assert config.prior.frames == 10**7 and config.prior.mean.shape == (80, 3)
    batch, lengths = featurize_batch(speech[None], [len(speech)], config)
    np.testing.assert_allclose(
        batch.numpy()[0], features(speech, causal=False), rtol=5e-3, atol=2e-3
    )


def test_hparams_that_want_a_prior_without_its_statistics_are_refused():
    config = FeatureConfig(causal_normalization=True, prior_frames=100)
    with pytest.raises(ValueError, match="hold no training-set statistics .* t2t-lite-trainer"):
        featurize_batch(np.ones((1, 1600), np.float32), [1600], config)
    assert FeatureConfig(causal_normalization=True).required_prior() is None


def test_a_prior_without_causal_normalization_is_refused():
    with pytest.raises(ValueError, match="without audio_causal_normalization"):
        FeatureConfig.from_hparams(
            HParams(**{**AUDIO_HPARAMS, "audio_normalization_prior_frames": 100})
        )


def test_a_floor_leaves_the_quiet_before_speech_out_of_the_statistics(librispeech_flac):
    """A second of quiet noise (-85 dBFS, 25 dB under this recording's mean
    frame) before an utterance: with a floor 20 dB under the prior's level,
    the speech's log-mel frames normalize as they do alone (within what the
    first frames' windows, reaching into the quiet, change); counted, the
    quiet moves every one of them."""
    speech = read_audio(librispeech_flac)[:48000]
    overrides = {"audio_causal_normalization": True, "audio_normalization_prior_frames": 100}
    hparams = HParams(**{**AUDIO_HPARAMS, **overrides})
    statistics = feature_statistics([speech], FeatureConfig.from_hparams(hparams))
    store_prior(hparams, statistics.mean, statistics.mean_square)
    quiet = np.random.default_rng(0).uniform(-1e-4, 1e-4, 16000).astype(np.float32)  # 100 frames
    led = np.concatenate([quiet, speech])
    for floor, moved in ((0.0, True), (20.0, False)):
        config = dataclasses.replace(FeatureConfig.from_hparams(hparams), statistics_floor_db=floor)
        alone, lengths = featurize_batch(speech[None], [speech.size], config)
        after, _ = featurize_batch(led[None], [led.size], config)
        frames = int(lengths[0])
        log_mel = after.numpy()[0, 100 : 100 + frames, :, 0], alone.numpy()[0, :frames, :, 0]
        gap = np.abs(log_mel[0] - log_mel[1]).max()
        assert (gap > 0.5) if moved else (gap < 0.05), (floor, gap)


def test_a_floor_without_a_prior_is_refused():
    with pytest.raises(ValueError, match="audio_statistics_floor_db=20.0 without"):
        FeatureConfig(causal_normalization=True, statistics_floor_db=20.0)
