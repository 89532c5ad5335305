"""A room's noise floor at an absolute level, under everything a microphone records."""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.audio_augment.draws import split_seed, uniform, uniform_index
from t2t_lite.data.audio_augment.noise import colored_noise
from t2t_lite.data.audio_augment.waveform import as_waveform, clip_to_unit_range
from t2t_lite.data.audio_io import SAMPLE_RATE


def add_floor(
    waveform, dbfs: tuple[float, float] = (-75.0, -45.0), seed=None, sample_rate: int = SAMPLE_RATE
) -> tf.Tensor:
    """Adds a noise floor whose RMS level is drawn in `dbfs` (re full scale 1.0).

    Unlike additive noise at an SNR (`noise.add_noise`), the floor's level
    does not follow the speech's: a quiet room through a laptop microphone is
    about -60 dBFS whoever speaks, and it is there before the first word, in
    the pauses and after the last (apply it after the pauses are added). The
    noise is white, pink or brown, drawn. Recognizers trained on digitally
    silent corpora read a second of -60 dBFS floor as speech.

    Args:
      waveform: float32 `[samples]`.
      dbfs: `(min, max)` RMS level of the floor in dBFS.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.
      sample_rate: sample rate in Hz.

    Returns:
      float32 `[samples]` in [-1, 1].

    Example:
      >>> floor = add_floor(tf.zeros([16000]), (-60.0, -60.0), seed=1)
      >>> round(float(10 * tf.math.log(tf.reduce_mean(floor**2)) / tf.math.log(10.0)))
      -60
    """
    waveform = as_waveform(waveform)
    level_seed, color_seed, noise_seed = split_seed(seed, 3)
    level_db = uniform(level_seed, float(dbfs[0]), float(dbfs[1]))
    beta = tf.gather(tf.constant([0.0, 1.0, 2.0]), uniform_index(color_seed, 3))
    noise = colored_noise(tf.shape(waveform)[0], beta, noise_seed, sample_rate)
    return clip_to_unit_range(waveform + noise * tf.pow(10.0, level_db / 20.0))
