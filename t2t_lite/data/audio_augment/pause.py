"""A pause before or after the utterance: a stretch of quieter noise.

Such a stretch is what a long recording's pauses and a live stream's silence
before speech are.
"""

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
    noise = _pause_noise(waveform, seconds, below_db, sample_rate, seed)
    return clip_to_unit_range(tf.concat([waveform, noise], axis=0))


def prepend_pause(waveform, seconds: tuple[float, float], below_db: tuple[float, float],
                  sample_rate: int, seed=None) -> tuple[tf.Tensor, tf.Tensor]:  # fmt: skip
    """A pause of white noise `below_db` under the utterance's RMS level, then the utterance.

    A live stream's utterance, or a recording started before the speaker
    spoke, begins with the room's quiet; a model that only ever heard
    utterances begin with their first word reads a second of it as speech
    (the quick start's models lost most words to a second of
    quiet noise before each utterance).

    Args and seed as for `append_pause`.

    Returns:
      `(waveform, lead)`: float32 `[pause + samples]` in [-1, 1], and the
      pause's length in samples (int32 scalar: every time in the utterance
      moves by it).

    Example:
      >>> waveform, lead = prepend_pause(tf.fill([8], 0.5), (0.5, 0.5), (40.0, 40.0), 8, seed=1)
      >>> waveform.shape, int(lead)
      (TensorShape([12]), 4)
    """
    waveform = as_waveform(waveform)
    noise = _pause_noise(waveform, seconds, below_db, sample_rate, seed)
    return clip_to_unit_range(tf.concat([noise, waveform], axis=0)), tf.shape(noise)[0]


def _pause_noise(waveform, seconds, below_db, sample_rate, seed) -> tf.Tensor:
    """float32 `[pause]`: white noise of a drawn length, quieter than `waveform`.

    Its level is `below_db` (drawn) under `waveform`'s RMS level.
    """
    length_seed, level_seed, noise_seed = split_seed(stateless_seed(seed), 3)
    length = tf.cast(
        tf.round(uniform(length_seed, float(seconds[0]), float(seconds[1])) * sample_rate),
        tf.int32,
    )
    level = tf.sqrt(tf.reduce_mean(tf.square(waveform)) + 1e-12)
    level *= tf.pow(10.0, -uniform(level_seed, float(below_db[0]), float(below_db[1])) / 20.0)
    return tf.random.stateless_normal([length], noise_seed) * level
