"""Speech features as pure TensorFlow ops: log-mel filterbanks, deltas, CMVN.

These run inside `tf.data` maps, `tf.function`s and XLA (`jit_compile=True`),
so the input pipeline can run on a TPU host and the exported SavedModel can
featurize raw waveforms itself (docs/design.md, "Data flow").

`compute_mel_filterbank_features` and `add_delta_deltas` keep Tensor2Tensor's
signatures and numerics (`tensor2tensor/layers/common_audio.py`) with two
fixes, documented where they happen: the frame mask keeps exactly the frames
that start inside the waveform, and samples past a waveform's length (dither
noise included) are zeroed. Both make an utterance featurize the same alone and
inside a zero-padded batch. One change is for speed: the dither is triangular
noise of T2T's level, not Gaussian (`triangular_noise`).

Typical use for one utterance (T2T's `transformer_librispeech` front end):

    waveform = tf.cast(pcm, tf.float32) / 32767.0            # [samples]
    features = compute_mel_filterbank_features(
        waveform[tf.newaxis], lower_edge_hertz=20.0, upper_edge_hertz=8000.0,
        dither=0.0 if inference else 1.0 / 32767)            # [1, frames, 80, 1]
    features = add_delta_deltas(features)[0]                 # [frames, 80, 3]
    features = normalize_per_utterance(features)

SpecAugment is `spec_augment.py`; stateless seeds are `random_seeds.py`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from t2t_lite.data.random_seeds import stateless_seed
from t2t_lite.platform import tf_uses_onednn

_DEFAULT_DITHER = 1.0 / np.iinfo(np.int16).max
_periodic_hann_window = functools.partial(tf.signal.hann_window, periodic=True)


def samples_in(milliseconds: float, sample_rate: float) -> int:
    """Whole samples in `milliseconds` at `sample_rate` (frame steps and windows)."""
    return int(milliseconds * sample_rate / 1e3)


def num_feature_frames(
    waveform_lengths: tf.Tensor,
    sample_rate: float = 16000,
    frame_step: float = 10,
    preemphasis: float = 0.97,
) -> tf.Tensor:
    """Number of real (unpadded) frames `compute_mel_filterbank_features` makes.

    A frame is real when it starts inside the (pre-emphasized) waveform. Use
    this to build the `nonpadding_mask` for `normalize_per_utterance`.

    Args:
      waveform_lengths: int tensor of waveform lengths in samples, any shape.
      sample_rate: sample rate in Hz.
      frame_step: frame step in milliseconds.
      preemphasis: the pre-emphasis coefficient (it shortens the signal by one
        sample when > 0).

    Returns:
      An int32 tensor shaped like `waveform_lengths`.

    Example:
      >>> num_feature_frames(tf.constant([16000, 1])).numpy()
      array([100,   0], dtype=int32)
    """
    lengths = tf.cast(waveform_lengths, tf.int32)
    if preemphasis > 0:
        lengths = tf.maximum(lengths - 1, 0)
    step = samples_in(frame_step, sample_rate)
    return (lengths + step - 1) // step


def compute_mel_filterbank_features(
    waveforms: tf.Tensor,
    sample_rate: float = 16000,
    dither: float = _DEFAULT_DITHER,
    preemphasis: float = 0.97,
    frame_length: float = 25,
    frame_step: float = 10,
    fft_length: int | None = None,
    window_fn: Callable[..., tf.Tensor] = _periodic_hann_window,
    lower_edge_hertz: float = 80.0,
    upper_edge_hertz: float = 7600.0,
    num_mel_bins: int = 80,
    log_noise_floor: float = 1e-3,
    apply_mask: bool = True,
    waveform_lengths: tf.Tensor | None = None,
    seed: tf.Tensor | None = None,
) -> tf.Tensor:
    """Log-mel filterbank features of a batch of waveforms, as T2T computes them.

    Steps: find each waveform's length; add triangular dither; pre-emphasize
    (`y[t] = x[t+1] - preemphasis * x[t]`); STFT with a periodic Hann window
    and `pad_end=True`; magnitude; mel warp with
    `tf.signal.linear_to_mel_weight_matrix` (HTK mel scale);
    `log(max(log_noise_floor, mel))`; zero the frames past each length.

    Args:
      waveforms: float32 `[batch, samples]`, zero-padded at the end.
      sample_rate: sample rate in Hz.
      dither: standard deviation of the triangular noise (`triangular_noise`)
        added to the waveform (1/32767 in training, 0 at inference).
      preemphasis: high-pass coefficient; 0 disables pre-emphasis.
      frame_length: frame length in milliseconds (25 ms = 400 samples).
      frame_step: frame step in milliseconds (10 ms = 160 samples).
      fft_length: FFT size; default the next power of two >= frame length.
      window_fn: window function called as `window_fn(frame_length, dtype=...)`.
      lower_edge_hertz: lowest mel band edge in Hz.
      upper_edge_hertz: highest mel band edge in Hz.
      num_mel_bins: number of mel bands.
      log_noise_floor: mel energies are clipped to at least this before `log`.
      apply_mask: zero the frames past each waveform's length.
      waveform_lengths: optional int `[batch]` true lengths in samples. The
        default (None) is T2T's rule: last nonzero sample + 1.
      seed: optional int `[2]` seed for the dither noise, which is the same
        with and without XLA, so a seeded `tf.data` pipeline is repeatable.

    Returns:
      float32 `[batch, frames, num_mel_bins, 1]`, `frames = ceil((samples - 1)
      / frame_step_samples)` with pre-emphasis (`ceil(samples / step)` without).

    Example:
      >>> waveforms = tf.random.uniform([2, 16000], -0.5, 0.5)
      >>> compute_mel_filterbank_features(waveforms).shape
      TensorShape([2, 100, 80, 1])
    """
    waveforms = tf.convert_to_tensor(waveforms, tf.float32)
    num_samples = tf.shape(waveforms)[1]
    if waveform_lengths is None:
        # Exact zeros are common inside speech, so count up to the last
        # nonzero sample rather than counting nonzero samples.
        positions = tf.range(num_samples)[tf.newaxis, :]
        nonzero = tf.cast(tf.not_equal(waveforms, 0.0), tf.int32)
        wav_lens = tf.reduce_max(positions * nonzero, axis=-1) + 1
    else:
        wav_lens = tf.minimum(tf.cast(waveform_lengths, tf.int32), num_samples)

    if dither > 0:
        waveforms += triangular_noise(tf.shape(waveforms), dither, seed)
    # Unlike T2T, zero everything past the length (dither noise and any
    # padding garbage), so padding never changes the real frames.
    waveforms *= tf.sequence_mask(wav_lens, num_samples, dtype=tf.float32)
    if preemphasis > 0:
        waveforms = waveforms[:, 1:] - preemphasis * waveforms[:, :-1]
        # The last real sample minus its zero successor is not real signal.
        wav_lens = tf.maximum(wav_lens - 1, 0)
        waveforms *= tf.sequence_mask(wav_lens, num_samples - 1, dtype=tf.float32)

    frame_length_samples = samples_in(frame_length, sample_rate)
    frame_step_samples = samples_in(frame_step, sample_rate)
    if fft_length is None:
        fft_length = int(2 ** np.ceil(np.log2(frame_length_samples)))
    stfts = tf.signal.stft(
        waveforms,
        frame_length=frame_length_samples,
        frame_step=frame_step_samples,
        fft_length=fft_length,
        window_fn=window_fn,
        pad_end=True,
    )
    # |z| as sqrt(re^2 + im^2): within an ulp of `tf.abs`, whose overflow-safe
    # complex kernel took a quarter of the features' time.
    real, imaginary = tf.math.real(stfts), tf.math.imag(stfts)
    magnitude_spectrograms = tf.sqrt(real * real + imaginary * imaginary)
    linear_to_mel_weight_matrix = tf.signal.linear_to_mel_weight_matrix(
        num_mel_bins,
        fft_length // 2 + 1,
        sample_rate,
        lower_edge_hertz,
        upper_edge_hertz,
    )
    mel_spectrograms = tf.tensordot(magnitude_spectrograms, linear_to_mel_weight_matrix, 1)
    log_mel_spectrograms = tf.math.log(tf.maximum(log_noise_floor, mel_spectrograms))

    if apply_mask:
        # T2T keeps frame indices <= ceil(len / step): one frame too many, and
        # that frame exists only when the batch is padded. Keep < instead.
        stft_lens = (wav_lens + frame_step_samples - 1) // frame_step_samples
        masks = tf.sequence_mask(stft_lens, tf.shape(log_mel_spectrograms)[1], dtype=tf.float32)
        log_mel_spectrograms *= tf.expand_dims(masks, -1)
    # expand_dims, not [..., newaxis]: TFLite's converter cannot lower that
    # slice where the batch is not static (the streaming .tflite's).
    return tf.expand_dims(log_mel_spectrograms, -1)


def triangular_noise(shape, stddev: float, seed: tf.Tensor | None = None) -> tf.Tensor:
    """Zero-mean triangular (TPDF) noise of standard deviation `stddev`: dither.

    Each sample is the sum of two independent uniform 16-bit integers, both
    cut from one random 32-bit draw, centred and scaled: the triangular
    dither of audio practice. T2T drew Gaussian noise; the spectrum (white)
    and the level are the same, and a Gaussian draw's logarithms and sines
    cost more than the whole log-mel computation it dithers (docs/design.md).

    Args:
      shape: the shape of the noise (a list or an int tensor).
      stddev: its standard deviation.
      seed: optional int `[2]` seed (stateless draws, repeatable in
        `tf.data`, `tf.function` and XLA alike); None draws a fresh one.

    Returns:
      float32 noise of `shape`, in `[-sqrt(6), sqrt(6)] x stddev`.

    Example:
      >>> noise = triangular_noise([16000], 1.0 / 32767, seed=[1, 2])
      >>> round(float(tf.math.reduce_std(noise)) * 32767, 1)
      1.0
    """
    bits = tf.random.stateless_uniform(
        shape, seed=stateless_seed(seed), minval=None, maxval=None, dtype=tf.uint32
    )
    halves = tf.bitwise.bitwise_and(bits, 0xFFFF) + tf.bitwise.right_shift(bits, 16)
    # Each half is uniform on {0..65535}: mean 32767.5, variance (65536^2 - 1) / 12.
    scale = stddev / np.sqrt((65536.0**2 - 1) / 6)
    return (tf.cast(halves, tf.float32) - 65535.0) * scale


def zero_non_finite(waveforms) -> tf.Tensor:
    """`waveforms` as float32 with every NaN or infinite sample made 0.

    A damaged file or a client's uninitialized buffer can hold such samples;
    read as silence, they cannot turn a whole row's features or level into
    NaN, and the row decodes as the silence it most likely is.

    Args:
      waveforms: float (or int) tensor of samples, any shape.

    Returns:
      float32 tensor shaped like `waveforms`.

    Example:
      >>> zero_non_finite([0.5, float("nan"), float("-inf")]).numpy()
      array([0.5, 0. , 0. ], dtype=float32)
    """
    waveforms = tf.cast(waveforms, tf.float32)
    return tf.where(tf.math.is_finite(waveforms), waveforms, 0.0)


def level_dbfs(waveforms, lengths) -> tf.Tensor:
    """RMS level of each waveform's real samples in dB full scale (-inf for none).

    Args:
        waveforms: float `[batch, samples]` in [-1, 1], finite (audio is
            cleaned where it enters: `zero_non_finite`).
        lengths: int `[batch]` real samples per row.

    Returns:
        float32 `[batch]`: 0 for a full-scale square wave, about -3 for a
        full-scale sine, -inf for an empty or all-zero waveform.

    Example:
    ```python
    level_dbfs(tf.zeros([1, 16000]), [16000])  # [-inf]
    ```
    """
    waveforms = tf.cast(waveforms, tf.float32)
    mask = tf.sequence_mask(lengths, tf.shape(waveforms)[1], tf.float32)
    energy = tf.reduce_sum(tf.square(waveforms) * mask, axis=1)
    mean = energy / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
    return 10.0 * tf.math.log(mean) / tf.math.log(10.0)


def _delta_delta_filters() -> np.ndarray:
    """T2T's [9, 1, 1, 3] conv kernel: identity, delta, delta-delta, L2-normed."""
    delta = np.array([2, 1, 0, -1, -2], np.float64)
    delta_delta = np.convolve(delta, delta)  # 9 taps
    filters = np.stack([np.eye(9)[4], np.pad(delta, 2), delta_delta], axis=1)  # [taps, channels]
    filters /= np.sqrt(np.sum(filters**2, axis=0, keepdims=True))
    return filters[:, np.newaxis, np.newaxis, :].astype(np.float32)


def delta_delta_reach() -> int:
    """Frames the delta-deltas read on each side of a frame (4: 9 taps)."""
    return _delta_delta_filters().shape[0] // 2


def add_delta_deltas(filterbanks: tf.Tensor) -> tf.Tensor:
    """Appends first- and second-order time-derivative channels (T2T's recipe).

    Three filters over the time axis, each divided by its L2 norm: identity,
    delta `[2, 1, 0, -1, -2]` and delta-delta (delta convolved with itself,
    9 taps). They are applied as a SAME (zero-padded) cross-correlation over
    time, as T2T's `tf.nn.conv2d` applies them, so channel 1 is
    `(2 x[t-2] + x[t-1] - x[t+1] - 2 x[t+2]) / sqrt(10)` (the negated
    textbook delta, exactly as in T2T). The correlation runs as a depthwise
    convolution with the bins as channels or, where TensorFlow runs oneDNN's
    kernels (whose depthwise convolution is far slower: docs/benchmarks.md),
    as a `conv1d` over each bin's frames.

    Args:
      filterbanks: float32 `[batch, frames, bins, 1]` or `[frames, bins, 1]`.

    Returns:
      float32 `[batch, frames, bins, 3]` (or `[frames, bins, 3]`).

    Example:
      >>> add_delta_deltas(tf.zeros([2, 50, 80, 1])).shape
      TensorShape([2, 50, 80, 3])
    """
    filterbanks = tf.convert_to_tensor(filterbanks, tf.float32)
    single_utterance = filterbanks.shape.rank == 3
    if single_utterance:
        filterbanks = filterbanks[tf.newaxis]
    correlate = _deltas_by_conv1d if tf_uses_onednn() else _deltas_by_depthwise_conv
    outputs = correlate(filterbanks[..., 0])
    return outputs[0] if single_utterance else outputs


# The delta-deltas' two formulations: the same sums, each fast where the other
# is slow (timings: docs/design.md, "Formulations chosen for oneDNN on CPU").
def _deltas_by_depthwise_conv(filterbanks: tf.Tensor) -> tf.Tensor:
    """`[batch, frames, bins]` -> `[batch, frames, bins, 3]` by a depthwise convolution.

    The bins are the convolution's channels, and output channel `3 * bin + k`
    is filter k over that bin, so a reshape gives `[..., bins, 3]`.
    """
    batch, frames, bins = tf.shape(filterbanks)[0], tf.shape(filterbanks)[1], filterbanks.shape[2]
    filters = np.tile(_delta_delta_filters(), [1, 1, bins, 1])  # [taps, 1, bins, 3]
    outputs = tf.nn.depthwise_conv2d(
        tf.reshape(filterbanks, [batch, frames, 1, bins]),
        tf.constant(filters),
        strides=[1, 1, 1, 1],
        padding="SAME",
    )
    return tf.reshape(outputs, [batch, frames, bins, 3])


def _deltas_by_conv1d(filterbanks: tf.Tensor) -> tf.Tensor:
    """`[batch, frames, bins]` -> `[batch, frames, bins, 3]` by a `conv1d`.

    Each bin's frames are one row of a one-channel, three-filter `conv1d`.
    """
    batch, frames, bins = tf.shape(filterbanks)[0], tf.shape(filterbanks)[1], filterbanks.shape[2]
    rows = tf.reshape(tf.transpose(filterbanks, [0, 2, 1]), [-1, frames, 1])
    filters = tf.constant(_delta_delta_filters()[:, 0])  # [taps, 1, 3]
    outputs = tf.nn.conv1d(rows, filters, stride=1, padding="SAME")  # [batch * bins, frames, 3]
    return tf.transpose(tf.reshape(outputs, [batch, bins, frames, 3]), [0, 2, 1, 3])


def _frames_to_features(mask) -> tf.Tensor:
    """A `[batch, frames]` mask as float32 `[batch, frames, 1, 1]`."""
    return tf.expand_dims(tf.expand_dims(tf.cast(mask, tf.float32), -1), -1)


def normalize_per_utterance(
    features: tf.Tensor,
    nonpadding_mask: tf.Tensor | None = None,
    epsilon: float = 1e-9,
    statistics_mask: tf.Tensor | None = None,
) -> tf.Tensor:
    """Per-utterance mean/variance normalization over time (T2T's CMVN stand-in).

    For each utterance and each (bin, channel), subtract the mean over time and
    divide by `sqrt(variance + epsilon)`. With a mask, the statistics use the
    real frames only and padded frames come out as exactly zero.

    Args:
      features: float32 `[batch, frames, bins, channels]` or
        `[frames, bins, channels]`; time is axis -3.
      nonpadding_mask: optional `[batch, frames]` (or `[frames]`) mask, 1 for
        real frames and 0 for padding (bool or numeric).
      epsilon: added to the variance before the square root.
      statistics_mask: optional mask shaped like `nonpadding_mask` of the
        frames the statistics come from (e.g. the real frames that are not
        digital silence); a row with none of them uses its real frames.

    Returns:
      float32 tensor shaped like `features`.

    Example:
      >>> features = tf.random.normal([2, 30, 80, 3])
      >>> mask = tf.sequence_mask([30, 20], 30)
      >>> normalize_per_utterance(features, mask).shape
      TensorShape([2, 30, 80, 3])
    """
    features = tf.convert_to_tensor(features, tf.float32)
    time_axis = -3
    if nonpadding_mask is None:
        mean = tf.reduce_mean(features, axis=time_axis, keepdims=True)
        variance = tf.reduce_mean(tf.square(features - mean), axis=time_axis, keepdims=True)
        return (features - mean) * tf.math.rsqrt(variance + epsilon)

    # expand_dims rather than [..., None, None]: TFLite's converter cannot
    # lower that slice (the on-device export runs this graph).
    mask = _frames_to_features(nonpadding_mask)
    weights = mask
    if statistics_mask is not None:
        chosen = _frames_to_features(statistics_mask) * mask
        has_any = tf.reduce_sum(chosen, axis=time_axis, keepdims=True) > 0
        weights = tf.where(has_any, chosen, mask)
    # max(count, 1) keeps an all-padding utterance at zero instead of NaN.
    count = tf.maximum(tf.reduce_sum(weights, axis=time_axis, keepdims=True), 1.0)
    mean = tf.reduce_sum(features * weights, axis=time_axis, keepdims=True) / count
    variance = (
        tf.reduce_sum(tf.square(features - mean) * weights, axis=time_axis, keepdims=True) / count
    )
    return (features - mean) * mask * tf.math.rsqrt(variance + epsilon)
