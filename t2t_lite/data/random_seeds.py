"""Seeds for TF's stateless random ops that give the same draws everywhere.

The featurization's and augmentations' randomness (dither, SpecAugment,
speed, volume, noise, envelope) is drawn by stateless ops keyed by an
example's seed, so an example is augmented alike in eager mode,
`tf.function` and `tf.data`; integer draws (dither's bits, SpecAugment's
bands, speed's choice) also under XLA, whose float draws differ.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

INT32_MAX = np.iinfo(np.int32).max


def stateless_seed(seed: int | tf.Tensor | None) -> tf.Tensor:
    """An int64 `[2]` seed for stateless ops, from `seed`.

    None draws a fresh seed from the global generator. Each element is reduced
    to its low 32 bits because XLA's stateless kernels only read those, while
    the TF kernels read all 64: without this, the same seed would give
    different draws under `jit_compile=True`.
    """
    if seed is None:
        seed = tf.random.uniform([2], maxval=INT32_MAX, dtype=tf.int32)
    elif isinstance(seed, (int, np.integer)):
        seed = [int(seed), 0]
    return tf.bitwise.bitwise_and(tf.cast(seed, tf.int64), tf.constant(0xFFFFFFFF, tf.int64))
