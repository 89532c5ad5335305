"""Envelope augmentation: a random smooth change of the spectrum's shape.

A voice or a microphone the model never heard differs first in its long-term
spectrum (its envelope). Per-utterance normalization removes that difference
with the whole utterance's mean; a streaming model's causal statistics
cannot (`causal_normalization.py`: they know only the frames so far), so it
is taught to ignore it instead: in training, each utterance's log-mel
frames get the same random curve over the mel bins, a sum of
`ENVELOPE_TERMS` cosines (a tilt and two finer bends) each of amplitude
drawn uniformly in `[-aug_envelope_db, aug_envelope_db]` dB. The curve has
no flat part: level is the volume augmentation's. Off (0) by default.

Example:
>>> log_mel = tf.zeros([1, 5, 8, 1])
>>> changed = perturb_envelope(log_mel, max_db=6.0, seed=3)
>>> bool(tf.reduce_all(changed[0, 0] == changed[0, 4]))  # one curve per utterance
True
"""

from __future__ import annotations

import math

import tensorflow as tf

from t2t_lite.data.random_seeds import stateless_seed

ENVELOPE_TERMS = 3
# T2T's log-mel is the log of magnitudes (not powers): 20 dB is a factor 10.
LOG_PER_DB = math.log(10.0) / 20.0
_ENVELOPE_TAG = 0x456E76  # "Env": its own random stream, apart from dither's


def random_envelope(num_bins, max_db: float, seed=None) -> tf.Tensor:
    """A random smooth curve over the mel bins.

    Args:
        num_bins: mel bins.
        max_db: each cosine term's largest amplitude, in dB.
        seed: int or int `[2]` (None: a fresh draw).

    Returns:
        float32 `[num_bins]` in log-magnitude units, mean 0.
    """
    seed = tf.random.fold_in(stateless_seed(seed), _ENVELOPE_TAG)
    amplitudes = tf.random.stateless_uniform(
        [ENVELOPE_TERMS], seed=seed, minval=-max_db, maxval=max_db
    )
    position = (tf.range(num_bins, dtype=tf.float32) + 0.5) / tf.cast(num_bins, tf.float32)
    terms = tf.cos(math.pi * tf.range(1.0, ENVELOPE_TERMS + 1.0)[:, None] * position[None, :])
    return LOG_PER_DB * tf.reduce_sum(amplitudes[:, None] * terms, axis=0)


def perturb_envelope(log_mel, max_db: float, seed=None) -> tf.Tensor:
    """Log-mel frames with one random envelope added.

    Args:
        log_mel: float32 `[batch, frames, bins, channels]`.
        max_db: as `random_envelope`'s.
        seed: as `random_envelope`'s.

    Returns:
        `log_mel` plus one `random_envelope`, the same in every frame and row.
    """
    log_mel = tf.convert_to_tensor(log_mel, tf.float32)
    envelope = random_envelope(tf.shape(log_mel)[2], max_db, seed)
    return log_mel + envelope[None, None, :, None]
