"""Stateless random draws for waveform augmentation, all keyed by int `[2]` seeds.

The same seed gives the same draw, in eager mode, in a `tf.function` and
under XLA, so an augmented copy is a function of the example's seed alone.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.random_seeds import stateless_seed

_PROB_SCALE = 1 << 24  # probabilities are compared as integers (same under XLA)


def split_seed(seed, num: int) -> list[tf.Tensor]:
    """`num` independent int64 `[2]` seeds from one (low 32 bits kept, as XLA reads)."""
    seeds = tf.random.split(stateless_seed(seed), num)
    return [stateless_seed(seeds[index]) for index in range(num)]


def uniform_index(seed: tf.Tensor, count) -> tf.Tensor:
    """An int32 scalar uniform in [0, count), from an integer draw."""
    return tf.random.stateless_uniform(
        [], seed=seed, minval=0, maxval=tf.cast(count, tf.int32), dtype=tf.int32
    )


def uniform(seed: tf.Tensor, low: float, high: float) -> tf.Tensor:
    """A float32 scalar uniform in [low, high) (exactly `low` when they are equal)."""
    if low == high:
        return tf.constant(low, tf.float32)
    return tf.random.stateless_uniform([], seed=seed, minval=low, maxval=high)


def coin(seed: tf.Tensor, probability: float) -> tf.Tensor:
    """A bool scalar, True with `probability`."""
    threshold = int(round(probability * _PROB_SCALE))
    draw = tf.random.stateless_uniform([], seed=seed, minval=0, maxval=_PROB_SCALE, dtype=tf.int32)
    return draw < threshold
