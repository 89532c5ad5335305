"""The band of a cheap microphone or a telephone line: frequencies outside it cut."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_augment.draws import split_seed, uniform
from t2t_lite.data.audio_augment.waveform import as_waveform, next_fast_length
from t2t_lite.data.audio_io import SAMPLE_RATE

# Each edge falls from full gain to none over half an octave (a raised cosine
# in log frequency), about what a small capsule's or a line's response does.
SKIRT_OCTAVES = 0.5


def band_gain(hertz, low_hz, high_hz) -> tf.Tensor:
    """The band's gain at `hertz`: 1 inside the band, tapering to 0 outside it.

    The band is [low_hz, high_hz]; the gain falls to 0 half an octave outside
    each edge.
    """
    hertz = tf.maximum(tf.cast(hertz, tf.float32), 1e-3)
    below = tf.clip_by_value(tf.math.log(hertz / low_hz) / np.log(2) / SKIRT_OCTAVES + 1, 0, 1)
    above = tf.clip_by_value(tf.math.log(high_hz / hertz) / np.log(2) / SKIRT_OCTAVES + 1, 0, 1)
    return (0.5 - 0.5 * tf.cos(np.pi * below)) * (0.5 - 0.5 * tf.cos(np.pi * above))


def band_limit(
    waveform,
    low_hz: tuple[float, float] = (50.0, 400.0),
    high_hz: tuple[float, float] = (3400.0, 8000.0),
    seed=None,
    sample_rate: int = SAMPLE_RATE,
) -> tf.Tensor:
    """Cuts what lies outside a random band: a microphone's or a telephone line's.

    The band's lower edge is drawn uniformly in `low_hz` (a laptop or phone
    capsule loses the lows under 100-400 Hz; a telephone line under 300 Hz),
    its upper edge in `high_hz` (a telephone line passes 3.4 kHz; at 8 kHz
    nothing of 16 kHz audio is cut), each edge falling over `SKIRT_OCTAVES`.
    Applied as a gain on the waveform's spectrum (one real FFT each way); the
    length is kept and what is outside the band is gone, not re-leveled.

    Args:
      waveform: float32 `[samples]`.
      low_hz: `(min, max)` of the lower edge in Hz.
      high_hz: `(min, max)` of the upper edge in Hz.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.
      sample_rate: sample rate in Hz.

    Returns:
      float32 `[samples]`.

    Example:
      >>> band_limit(tf.ones([16000]) * 0.1, (300.0, 300.0), (3400.0, 3400.0), seed=1).shape
      TensorShape([16000])
    """
    waveform = as_waveform(waveform)
    low_seed, high_seed = split_seed(seed, 2)
    low = uniform(low_seed, float(low_hz[0]), float(low_hz[1]))
    high = uniform(high_seed, float(high_hz[0]), float(high_hz[1]))
    num_samples = tf.shape(waveform)[0]
    length = next_fast_length(tf.maximum(num_samples, 2))
    hertz = tf.cast(tf.range(length // 2 + 1), tf.float32) * (
        sample_rate / tf.cast(length, tf.float32)
    )
    spectrum = tf.signal.rfft(waveform, fft_length=length[tf.newaxis])
    gain = tf.complex(band_gain(hertz, low, high), 0.0)
    return tf.signal.irfft(spectrum * gain, fft_length=length[tf.newaxis])[:num_samples]
