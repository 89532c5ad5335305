"""Causal featurization (hparam audio_causal_normalization): a frame's features
never change when more audio arrives, beyond the streaming look-ahead."""

import numpy as np
import pytest

from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.causal_normalization import QUIET_STDS, fill_digital_silence_causally
from t2t_lite.data.speech_features import AUDIO_HPARAMS, featurize_batch
from t2t_lite.hparam import HParams
from t2t_lite.streaming.recognizer import feature_lookahead_frames


def features(waveform, causal: bool) -> np.ndarray:
    hparams = HParams(**{**AUDIO_HPARAMS, "audio_causal_normalization": causal})
    batch, lengths = featurize_batch(waveform[None], [len(waveform)], hparams)
    return batch.numpy()[0, : lengths.numpy()[0]]


@pytest.fixture(scope="module")
def recording(librispeech_flac):
    speech = read_audio(librispeech_flac)
    zeros = np.zeros(4000, np.float32)  # 0.25 s of exact digital silence inside
    return np.concatenate([speech[:16000], zeros, speech[16000:]])


def test_a_prefix_featurizes_as_the_whole_recording_up_to_the_lookahead(recording):
    lookahead = feature_lookahead_frames(HParams(**AUDIO_HPARAMS))
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
