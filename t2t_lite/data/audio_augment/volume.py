"""Volume perturbation: a random gain in dB."""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.audio_augment.draws import uniform
from t2t_lite.data.audio_augment.waveform import as_waveform, clip_to_unit_range
from t2t_lite.data.random_seeds import stateless_seed


def volume_perturb(waveform, min_gain_db: float, max_gain_db: float, seed=None) -> tf.Tensor:
    """Volume perturbation: a gain drawn uniformly in dB, then clipping to [-1, 1].

    Args:
      waveform: float32 `[samples]`.
      min_gain_db: lowest gain in dB (e.g. -6.0).
      max_gain_db: highest gain in dB (e.g. 6.0), >= `min_gain_db`.
      seed: an int `[2]` seed or a Python int; None draws a fresh one.

    Returns:
      float32 `[samples]`: `clip(waveform * 10^(gain / 20), -1, 1)`.

    Example:
      >>> volume_perturb(tf.fill([4], 0.5), 6.0, 6.0, seed=1).numpy().round(3)
      array([0.998, 0.998, 0.998, 0.998], dtype=float32)
    """
    waveform = as_waveform(waveform)
    if min_gain_db > max_gain_db:
        raise ValueError(f"min_gain_db {min_gain_db} is above max_gain_db {max_gain_db}.")
    gain_db = uniform(stateless_seed(seed), float(min_gain_db), float(max_gain_db))
    return clip_to_unit_range(waveform * tf.pow(10.0, gain_db / 20.0))
