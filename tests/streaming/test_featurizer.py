"""The incremental featurizer gives the whole stream's features, chunk by chunk."""

import dataclasses

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from t2t_lite.data.causal_normalization import Prior
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.speech_features import featurize_batch, unnormalized_features
from t2t_lite.streaming.featurizer import IncrementalFeaturizer


def _stream(librispeech_flac) -> np.ndarray:
    """Real speech with leading exact zeros, a run of digital silence inside
    and a quiet lead: every rule of the featurization has frames to act on."""
    speech, rate = soundfile.read(librispeech_flac, dtype="float32")
    assert rate == 16000
    quiet = np.random.default_rng(0).normal(0, 1e-4, 8000).astype(np.float32)
    return np.concatenate(
        [np.zeros(1234, np.float32), quiet, speech[:16000], np.zeros(4000, np.float32),
         speech[16000:]]
    )  # fmt: skip


def _causal_config(waveform, **changes) -> FeatureConfig:
    """The streaming sets' featurization, with a prior taken from the audio."""
    config = FeatureConfig(causal_normalization=True, prior_frames=100, statistics_floor_db=20.0)
    config = dataclasses.replace(config, **changes)
    features, real, _ = unnormalized_features(
        tf.constant(waveform[None]), tf.constant([len(waveform)]), config
    )
    frames = features[0].numpy()
    prior = Prior(frames.mean(axis=0), np.square(frames).mean(axis=0), config.prior_frames)
    return dataclasses.replace(config, prior=prior)


def _chunked(featurizer, waveform, sizes):
    state = featurizer.initial_state()
    outputs, start = [], 0
    for size in sizes:
        frames, state = featurizer.step(tf.constant(waveform[None, start : start + size]), state)
        assert state["pending"].shape[1] < featurizer.span  # bounded, whatever the stream
        outputs.append(frames.numpy())
        start += size
    frames, state = featurizer.step(tf.constant(waveform[None, start:]), state, final=True)
    outputs.append(frames.numpy())
    return np.concatenate(outputs, axis=1), state


@pytest.mark.parametrize("deltas", [True, False])
def test_chunks_of_any_size_featurize_as_the_whole_stream(librispeech_flac, deltas):
    waveform = _stream(librispeech_flac)
    config = _causal_config(waveform, add_delta_deltas=deltas)
    whole, lengths = featurize_batch(waveform[None], [len(waveform)], config)
    sizes = np.random.default_rng(1).choice([0, 1, 159, 160, 401, 1000, 10240], size=60)
    streamed, state = _chunked(IncrementalFeaturizer(config), waveform, sizes)
    assert streamed.shape == whole.shape
    assert int(lengths[0]) == streamed.shape[1]
    np.testing.assert_allclose(streamed, whole.numpy(), atol=2e-4)
    assert int(state["cut"]) == 1234  # the leading exact zeros, in the stream's clock
    assert int(state["frames"]) == streamed.shape[1]


def test_one_chunk_and_the_level_match_the_utterance(librispeech_flac):
    waveform = _stream(librispeech_flac)
    config = _causal_config(waveform)
    featurizer = IncrementalFeaturizer(config)
    streamed, state = _chunked(featurizer, waveform, [len(waveform)])
    whole, _ = featurize_batch(waveform[None], [len(waveform)], config)
    np.testing.assert_allclose(streamed, whole.numpy(), atol=2e-4)
    sounding = waveform[1234:]
    expected = 10 * np.log10(np.mean(np.square(sounding.astype(np.float64))))
    assert float(featurizer.level_dbfs(state)) == pytest.approx(expected, abs=1e-3)


def test_silence_alone_gives_no_frame_and_no_level():
    config = FeatureConfig(causal_normalization=True)
    featurizer = IncrementalFeaturizer(config)
    frames, state = featurizer.step(tf.zeros([1, 4000]), featurizer.initial_state())
    frames_at_end, state = featurizer.step(tf.zeros([1, 0]), state, final=True)
    assert frames.shape[1] == frames_at_end.shape[1] == 0
    assert int(state["cut"]) == 4000
    assert float(featurizer.level_dbfs(state)) == -np.inf


def test_per_utterance_statistics_are_refused():
    with pytest.raises(ValueError, match="audio_causal_normalization=True"):
        IncrementalFeaturizer(FeatureConfig())
