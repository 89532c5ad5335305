"""A pause after the utterance: a stretch of quieter noise, as a long recording's pauses are."""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.audio_augment.draws import split_seed, uniform
from t2t_lite.data.audio_augment.waveform import as_waveform, clip_to_unit_range
from t2t_lite.data.random_seeds import stateless_seed


def append_pause(waveform, seconds: tuple[float, float], below_db: tuple[float, float],
                 sample_rate: int, seed=None) -> tf.Tensor:  # fmt: skip
    """The utterance, then a pause of white noise `below_db` under its RMS level.

    A recording cut from a longer one goes on after its last word into the
    next pause, whose background need not be the utterance's own; a model
    that only ever heard utterances end with their audio reads that change
    of background as a word ending (the word boundary head did, on the long
    split). Nothing is said in the pause, so word times stay as they were.

    Args:
      waveform: float32 `[samples]`.
      seconds: `(min, max)` length of the pause, drawn uniformly.
      below_db: `(min, max)` dB under the utterance's RMS, drawn uniformly.
      sample_rate: samples per second.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.

    Returns:
      float32 `[samples + pause]` in [-1, 1].

    Example:
      >>> append_pause(tf.fill([8], 0.5), (0.5, 0.5), (40.0, 40.0), 8, seed=1).shape
      TensorShape([12])
    """
    waveform = as_waveform(waveform)
    length_seed, level_seed, noise_seed = split_seed(stateless_seed(seed), 3)
    length = tf.cast(
        tf.round(uniform(length_seed, float(seconds[0]), float(seconds[1])) * sample_rate),
        tf.int32,
    )
    level = tf.sqrt(tf.reduce_mean(tf.square(waveform)) + 1e-12)
    level *= tf.pow(10.0, -uniform(level_seed, float(below_db[0]), float(below_db[1])) / 20.0)
    noise = tf.random.stateless_normal([length], noise_seed) * level
    return clip_to_unit_range(tf.concat([waveform, noise], axis=0))
