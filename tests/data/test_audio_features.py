"""Tests for t2t_lite.data.audio_features against NumPy re-derivations."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data import audio_features, audio_io, digital_silence

# The speech problem's settings (docs/design.md, "T2T semantics kept") and T2T's
# function defaults.
MEL_EDGES = [(20.0, 8000.0), (80.0, 7600.0)]


# ---------------------------------------------------------------- NumPy recipe


def _hertz_to_mel(hertz):
    """HTK mel scale, the one tf.signal uses."""
    return 1127.0 * np.log1p(np.asarray(hertz, np.float64) / 700.0)


def _numpy_mel_matrix(num_mel_bins, num_spectrogram_bins, sample_rate, lower, upper):
    """Triangular filters, equally spaced in mel, DC row zeroed (as tf.signal)."""
    linear_hertz = np.linspace(0.0, sample_rate / 2.0, num_spectrogram_bins)[1:]
    bin_mels = _hertz_to_mel(linear_hertz)[:, np.newaxis]
    edges = np.linspace(_hertz_to_mel(lower), _hertz_to_mel(upper), num_mel_bins + 2)
    left, center, right = edges[:-2], edges[1:-1], edges[2:]
    rising = (bin_mels - left) / (center - left)
    falling = (right - bin_mels) / (right - center)
    weights = np.maximum(0.0, np.minimum(rising, falling))
    return np.pad(weights, [[1, 0], [0, 0]])


def _numpy_log_mel(waveform, lower, upper, sample_rate=16000, num_mel_bins=80):
    """T2T's recipe at dither 0, written directly in float64 NumPy."""
    waveform = np.asarray(waveform, np.float64)
    waveform = waveform[: np.nonzero(waveform)[0].max() + 1]
    emphasized = waveform[1:] - 0.97 * waveform[:-1]
    frame_length, frame_step, fft_length = 400, 160, 512
    num_frames = -(-len(emphasized) // frame_step)  # pad_end=True
    padded_length = (num_frames - 1) * frame_step + frame_length
    emphasized = np.pad(emphasized, [0, padded_length - len(emphasized)])
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame_length) / frame_length)
    frames = np.stack(
        [
            emphasized[start : start + frame_length] * window
            for start in range(0, num_frames * frame_step, frame_step)
        ]
    )
    magnitudes = np.abs(np.fft.rfft(frames, fft_length))
    mel = magnitudes @ _numpy_mel_matrix(
        num_mel_bins, fft_length // 2 + 1, sample_rate, lower, upper
    )
    return np.log(np.maximum(1e-3, mel))


def _numpy_delta_deltas(filterbank):
    """[frames, bins] -> [frames, bins, 3], straight from the definition."""
    delta = np.array([2, 1, 0, -1, -2], np.float64)
    delta_delta = np.convolve(delta, delta)
    channels = []
    for taps in (np.array([1.0]), delta, delta_delta):
        taps = taps / np.linalg.norm(taps)
        half = len(taps) // 2
        padded = np.pad(filterbank, [[half, half], [0, 0]])
        # Cross-correlation, as tf.nn.conv2d computes it.
        channels.append(
            sum(tap * padded[offset : offset + len(filterbank)] for offset, tap in enumerate(taps))
        )
    return np.stack(channels, axis=-1)


@pytest.fixture(scope="module")
def utterance(librispeech_flac):
    return audio_io.read_audio(librispeech_flac)


# ------------------------------------------------------------ mel filterbanks


@pytest.mark.parametrize("lower, upper", MEL_EDGES)
def test_mel_features_match_numpy_recipe_on_real_speech(utterance, lower, upper):
    features = audio_features.compute_mel_filterbank_features(
        utterance[np.newaxis],
        dither=0.0,
        lower_edge_hertz=lower,
        upper_edge_hertz=upper,
    ).numpy()
    expected = _numpy_log_mel(utterance, lower, upper)
    assert features.shape == (1, expected.shape[0], 80, 1)
    assert expected.shape[0] == int(np.ceil((len(utterance) - 1) / 160))
    np.testing.assert_allclose(features[0, :, :, 0], expected, rtol=0, atol=1e-4)


def test_numpy_mel_matrix_matches_tf_signal():
    expected = _numpy_mel_matrix(80, 257, 16000, 20.0, 8000.0)
    actual = tf.signal.linear_to_mel_weight_matrix(80, 257, 16000, 20.0, 8000.0)
    np.testing.assert_allclose(actual.numpy(), expected, atol=1e-4)


def test_padding_in_a_batch_does_not_change_real_frames(utterance):
    other = utterance[:20000] * 0.5
    batch = np.zeros([2, len(utterance) + 1000], np.float32)
    batch[0, : len(utterance)] = utterance
    batch[1, : len(other)] = other
    lengths = [len(utterance), len(other)]

    batched = audio_features.compute_mel_filterbank_features(batch, dither=0.0).numpy()
    alone = audio_features.compute_mel_filterbank_features(other[np.newaxis], dither=0.0).numpy()
    frames = audio_features.num_feature_frames(tf.constant(lengths)).numpy()

    assert frames[1] == alone.shape[1]
    np.testing.assert_allclose(batched[1, : frames[1]], alone[0], atol=1e-5)
    assert np.all(batched[1, frames[1] :] == 0.0)
    assert np.all(batched[0, frames[0] :] == 0.0)
    assert np.all(batched[0, : frames[0]] != 0.0)

    # Explicit lengths make garbage in the padding irrelevant.
    garbage = batch.copy()
    garbage[1, len(other) :] = 0.25
    with_lengths = audio_features.compute_mel_filterbank_features(
        garbage, dither=0.0, waveform_lengths=tf.constant(lengths)
    ).numpy()
    np.testing.assert_allclose(with_lengths, batched, atol=1e-6)


def test_dither_is_small_and_repeatable_with_a_seed(utterance):
    waveforms = utterance[np.newaxis, :8000]
    clean = audio_features.compute_mel_filterbank_features(waveforms, dither=0.0)
    first = audio_features.compute_mel_filterbank_features(waveforms, seed=[1, 2])
    again = audio_features.compute_mel_filterbank_features(waveforms, seed=[1, 2])
    other = audio_features.compute_mel_filterbank_features(waveforms, seed=[1, 3])
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    assert not np.array_equal(first.numpy(), other.numpy())
    # 1/32767 noise only moves the log energy of quiet cells noticeably.
    assert np.median(np.abs(first.numpy() - clean.numpy())) < 0.05


def test_triangular_dither_has_the_level_asked_for_and_the_same_draws_under_xla():
    noise = audio_features.triangular_noise([200_000], 0.5, seed=[3, 4]).numpy()
    # Triangular on [-sqrt(6), sqrt(6)] x stddev; a sum of two uniforms is
    # not Gaussian: its excess kurtosis is -0.6 (a Gaussian's is 0).
    assert abs(noise.std() - 0.5) < 0.005 and abs(noise.mean()) < 0.005
    assert np.abs(noise).max() <= 0.5 * np.sqrt(6)
    kurtosis = np.mean((noise / noise.std()) ** 4) - 3
    assert abs(kurtosis + 0.6) < 0.05, kurtosis
    compiled = tf.function(
        lambda: audio_features.triangular_noise([1000], 0.5, seed=[3, 4]), jit_compile=True
    )()
    np.testing.assert_array_equal(compiled.numpy(), noise[:1000])


def test_features_run_in_tf_data_and_xla(utterance):
    waveform = utterance[:4000]
    eager = audio_features.add_delta_deltas(
        audio_features.compute_mel_filterbank_features(waveform[np.newaxis], dither=0.0)
    )[0]

    def featurize(samples):
        features = audio_features.compute_mel_filterbank_features(samples[tf.newaxis], dither=0.0)
        return audio_features.normalize_per_utterance(audio_features.add_delta_deltas(features)[0])

    dataset = tf.data.Dataset.from_tensors(waveform).map(featurize)
    (from_dataset,) = list(dataset)
    compiled = tf.function(
        lambda samples: audio_features.add_delta_deltas(
            audio_features.compute_mel_filterbank_features(samples[tf.newaxis], dither=0.0)
        )[0],
        jit_compile=True,
    )(tf.constant(waveform))

    np.testing.assert_allclose(
        from_dataset.numpy(),
        audio_features.normalize_per_utterance(eager).numpy(),
        atol=1e-4,
    )
    np.testing.assert_allclose(compiled.numpy(), eager.numpy(), atol=1e-4)


# ------------------------------------------------------------- delta-deltas


def test_delta_deltas_match_their_definition():
    rng = np.random.default_rng(0)
    filterbank = rng.normal(size=(37, 5)).astype(np.float32)
    batched = audio_features.add_delta_deltas(filterbank[np.newaxis, :, :, np.newaxis])
    single = audio_features.add_delta_deltas(filterbank[:, :, np.newaxis])
    expected = _numpy_delta_deltas(filterbank.astype(np.float64))
    assert batched.shape == (1, 37, 5, 3)
    np.testing.assert_allclose(batched.numpy()[0], expected, atol=1e-5)
    np.testing.assert_allclose(single.numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(single.numpy()[..., 0], filterbank, atol=1e-6)


@pytest.mark.parametrize(
    "correlate",
    [audio_features._deltas_by_depthwise_conv, audio_features._deltas_by_conv1d],
    ids=["depthwise", "conv1d"],
)
def test_both_delta_formulations_match_their_definition(correlate):
    rng = np.random.default_rng(2)
    filterbanks = rng.normal(size=(2, 23, 4)).astype(np.float32)
    outputs = tf.function(correlate)(tf.constant(filterbanks)).numpy()
    for index in range(2):
        expected = _numpy_delta_deltas(filterbanks[index].astype(np.float64))
        np.testing.assert_allclose(outputs[index], expected, atol=1e-5)


def test_delta_of_a_linear_ramp_is_constant_inside():
    ramp = np.tile(np.arange(20, dtype=np.float32)[:, np.newaxis, np.newaxis], (1, 2, 1))
    deltas = audio_features.add_delta_deltas(ramp).numpy()
    # T2T's filter is the negated textbook delta: (2*-2 + 1*-1 - 1*1 - 2*2) / sqrt(10).
    np.testing.assert_allclose(deltas[4:-4, :, 1], -10 / np.sqrt(10), atol=1e-5)
    np.testing.assert_allclose(deltas[4:-4, :, 2], 0.0, atol=1e-5)


# ------------------------------------------------------------ normalization


def test_normalization_over_real_frames_leaves_padding_zero():
    rng = np.random.default_rng(1)
    features = rng.normal(3.0, 2.0, size=(2, 40, 6, 3)).astype(np.float32)
    lengths = [40, 25]
    mask = tf.sequence_mask(lengths, 40)
    normalized = audio_features.normalize_per_utterance(features, mask).numpy()

    for index, length in enumerate(lengths):
        real = normalized[index, :length]
        np.testing.assert_allclose(real.mean(axis=0), 0.0, atol=1e-5)
        np.testing.assert_allclose(real.std(axis=0), 1.0, atol=1e-4)
        assert np.all(normalized[index, length:] == 0.0)
    # Padding content does not leak into the statistics.
    features[1, 25:] = 1e6
    again = audio_features.normalize_per_utterance(features, mask).numpy()
    np.testing.assert_allclose(again, normalized, atol=1e-5)


def test_normalization_without_mask_is_t2t_formula():
    rng = np.random.default_rng(2)
    features = rng.normal(size=(30, 4, 3)).astype(np.float32)
    normalized = audio_features.normalize_per_utterance(features).numpy()
    mean = features.mean(axis=0, keepdims=True)
    variance = ((features - mean) ** 2).mean(axis=0, keepdims=True)
    np.testing.assert_allclose(normalized, (features - mean) / np.sqrt(variance + 1e-9), atol=1e-5)


def test_normalization_of_all_padding_is_zero_not_nan():
    features = tf.ones([1, 5, 4, 3])
    normalized = audio_features.normalize_per_utterance(features, tf.zeros([1, 5]))
    assert np.all(normalized.numpy() == 0.0)


# ------------------------------------------------------------ digital silence


def test_digital_silence_frames_are_the_frames_starting_with_a_step_of_zeros():
    waveform = np.zeros(4000, np.float32)
    waveform[1600:2000] = 0.1
    waveform[3000] = 1.0 / 32767  # one quiet sample is sound, not silence
    silent = digital_silence.digital_silence_frames(waveform[None], [4000], 26).numpy()[0]
    frames = audio_features.num_feature_frames(tf.constant(4000)).numpy()
    expected = [i < frames and not np.any(waveform[i * 160 : i * 160 + 160]) for i in range(26)]
    np.testing.assert_array_equal(silent, expected)
    assert silent[:10].all() and not silent[10:13].any() and silent[13]
    assert not silent[18] and silent[19] and not silent[25]  # 25: past the frames


def test_digital_silence_frames_ignore_padding_and_the_length():
    batch = np.zeros([2, 3200], np.float32)
    batch[0] = 0.1
    silent = digital_silence.digital_silence_frames(batch, [3200, 1600], 20).numpy()
    assert not silent[0].any()
    assert silent[1, :10].all() and not silent[1, 10:].any()  # padding is not "real"


def test_fill_digital_silence_takes_each_bins_quiet_level():
    rng = np.random.default_rng(3)
    log_mel = rng.normal(size=[1, 40, 4, 1]).astype(np.float32)
    silent = np.zeros([1, 40], bool)
    silent[0, 30:] = True
    real = np.ones([1, 40], bool)
    filled = digital_silence.fill_digital_silence(log_mel, silent, real, percentile=10.0).numpy()
    np.testing.assert_array_equal(filled[0, :30], log_mel[0, :30])
    sounding = np.sort(log_mel[0, :30, :, 0], axis=0)
    expected = sounding[int(round(0.1 * 29))]
    np.testing.assert_allclose(filled[0, 30:, :, 0], np.broadcast_to(expected, (10, 4)))


def test_fill_digital_silence_keeps_an_utterance_with_no_sound():
    log_mel = np.full([1, 5, 3, 1], -6.9, np.float32)
    filled = digital_silence.fill_digital_silence(log_mel, np.ones([1, 5], bool), np.ones([1, 5]))
    np.testing.assert_array_equal(filled.numpy(), log_mel)


def test_normalization_statistics_can_come_from_some_frames():
    features = np.random.default_rng(4).normal(size=[1, 20, 2, 1]).astype(np.float32)
    chosen = np.arange(20) < 12
    normalized = audio_features.normalize_per_utterance(
        features, np.ones([1, 20]), statistics_mask=chosen[None]
    ).numpy()
    mean = features[0, :12].mean(axis=0)
    std = np.sqrt(features[0, :12].var(axis=0) + 1e-9)
    np.testing.assert_allclose(normalized[0], (features[0] - mean) / std, atol=1e-5)
    # A row with no chosen frame uses its real frames.
    fallback = audio_features.normalize_per_utterance(
        features, np.ones([1, 20]), statistics_mask=np.zeros([1, 20], bool)
    )
    np.testing.assert_allclose(
        fallback, audio_features.normalize_per_utterance(features), atol=1e-6
    )
