"""What every waveform augmentation shares: its input check, clipping, FFT lengths.

Spectral work (resampling, colored noise, convolution) uses `tf.signal`'s
real FFTs at lengths whose prime factors are 2, 3 and 5 (`next_fast_length`),
because an FFT of a length with a large prime factor costs about seven times
more.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def _five_smooth_numbers(limit: int) -> np.ndarray:
    """Sorted numbers 2^a 3^b 5^c <= limit: lengths the FFT handles fastest."""
    numbers = []
    power2 = 1
    while power2 <= limit:
        power3 = power2
        while power3 <= limit:
            power5 = power3
            while power5 <= limit:
                numbers.append(power5)
                power5 *= 5
            power3 *= 3
        power2 *= 2
    return np.array(sorted(numbers), np.int32)


_FAST_LENGTHS = _five_smooth_numbers(np.iinfo(np.int32).max)


def next_fast_length(length: tf.Tensor) -> tf.Tensor:
    """The smallest 5-smooth int32 >= `length` (a scalar, at least 1)."""
    length = tf.maximum(tf.cast(length, tf.int32), 1)
    table = tf.constant(_FAST_LENGTHS)
    return tf.gather(table, tf.searchsorted(table, length[tf.newaxis], side="left"))[0]


def as_waveform(waveform) -> tf.Tensor:
    """`waveform` as a float32 tensor, checked to be one utterance `[samples]`."""
    waveform = tf.convert_to_tensor(waveform, tf.float32)
    if waveform.shape.rank is not None and waveform.shape.rank != 1:
        raise ValueError(
            f"Waveform augmentation expects one utterance shaped [samples], got {waveform.shape}."
        )
    return waveform


def clip_to_unit_range(waveform: tf.Tensor) -> tf.Tensor:
    """Clips to [-1, 1], the range every augmentation returns."""
    return tf.clip_by_value(waveform, -1.0, 1.0)
