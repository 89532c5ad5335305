"""Vocal tract length perturbation (VTLP): a random warp of the frequency axis.

A longer or shorter vocal tract moves every formant by about the same
factor (a child's lie well above an adult's). VTLP (Jaitly and Hinton,
2013) draws a factor `alpha` per utterance in training, uniformly in
`[1 - aug_vtlp_warp, 1 + aug_vtlp_warp]`, and reads each mel band's energy
at its centre frequency warped by the piecewise-linear map Kaldi's VTLN uses
too: `f -> alpha * f` up to a knee under `BOUNDARY_HERTZ`, then the straight
line to the Nyquist frequency, so the spectrum's ends stay where they are.

Speed perturbation (`audio_augment/speed.py`) moves formants too, but
together with pitch and tempo; VTLP moves the spectral envelope alone.

Here the warp reads the log-mel frames between their bands (linear
interpolation along the mel axis) instead of rebuilding the filterbank
per utterance: the bands are narrow where formants lie (31 Hz apart at
300 Hz with 80 bands up to 8 kHz), and the augmentation then sits beside the
envelope's, on the log-mel, without touching the shared filterbank code.
Off (0) by default; training only.

Example:
>>> log_mel = tf.random.uniform([2, 5, 80, 1])
>>> warp_log_mel(log_mel, max_warp=0.1, sample_rate=16000, lower_edge_hertz=20.0,
...              upper_edge_hertz=8000.0, seed=3).shape
TensorShape([2, 5, 80, 1])
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.random_seeds import stateless_seed

# Jaitly and Hinton's F_hi: the warp is linear below it, so the speech band's
# formants move by `alpha` exactly.
BOUNDARY_HERTZ = 4800.0
_WARP_TAG = 0x56544C  # "VTL": its own random stream, apart from the others'


def warp_hertz(hertz, alpha, nyquist: float, boundary_hertz: float = BOUNDARY_HERTZ):
    """The piecewise-linear frequency warp.

    Args:
        hertz: float32 frequencies in `[0, nyquist]`, any shape.
        alpha: float32 warp factors, broadcastable against `hertz`.
        nyquist: half the sample rate; it maps to itself.
        boundary_hertz: where the linear part ends for `alpha <= 1`.

    Returns:
        `alpha * hertz` below the knee `boundary_hertz * min(alpha, 1) / alpha`,
        above it the line from the knee's image to `(nyquist, nyquist)`.

    Example:
    >>> warp_hertz(tf.constant([1000.0, 8000.0]), 1.1, nyquist=8000.0).numpy()
    array([1100., 8000.], dtype=float32)
    """
    hertz = tf.convert_to_tensor(hertz, tf.float32)
    alpha = tf.convert_to_tensor(alpha, tf.float32)
    knee_image = boundary_hertz * tf.minimum(alpha, 1.0)
    knee = knee_image / alpha
    above = nyquist - (nyquist - knee_image) / (nyquist - knee) * (nyquist - hertz)
    return tf.where(hertz <= knee, alpha * hertz, above)


def _hertz_to_mel(hertz):
    # The HTK scale of tf.signal.linear_to_mel_weight_matrix, which makes the bands.
    return 1127.0 * tf.math.log1p(hertz / 700.0)


def _mel_to_hertz(mel):
    return 700.0 * tf.math.expm1(mel / 1127.0)


def warp_log_mel(
    log_mel,
    max_warp: float,
    sample_rate: float,
    lower_edge_hertz: float,
    upper_edge_hertz: float,
    seed=None,
) -> tf.Tensor:
    """Log-mel frames, each row read along a randomly warped frequency axis.

    Args:
        log_mel: float32 `[batch, frames, bins, channels]`, bands spaced as
            `tf.signal.linear_to_mel_weight_matrix` spaces them between the
            two edges.
        max_warp: the largest `|alpha - 1|` (0.1 is Jaitly and Hinton's).
        sample_rate: Hz, for the Nyquist frequency.
        lower_edge_hertz, upper_edge_hertz: the filterbank's edges.
        seed: int or int `[2]` (None: a fresh draw).

    Returns:
        `log_mel`'s shape: band `k` of row `b` holds row `b`'s log-mel at the
        frequency `warp_hertz(centre_k, alpha_b)`, interpolated between
        bands and held at the outermost ones.
    """
    log_mel = tf.convert_to_tensor(log_mel, tf.float32)
    batch, bins = tf.shape(log_mel)[0], tf.shape(log_mel)[2]
    seed = tf.random.fold_in(stateless_seed(seed), _WARP_TAG)
    alpha = tf.random.stateless_uniform(
        [batch, 1], seed=seed, minval=1.0 - max_warp, maxval=1.0 + max_warp
    )
    # Band edges evenly spaced in mel; band k's centre is edge k + 1.
    low, high = _hertz_to_mel(lower_edge_hertz), _hertz_to_mel(upper_edge_hertz)
    spacing = (high - low) / tf.cast(bins + 1, tf.float32)
    centres = low + spacing * tf.range(1.0, tf.cast(bins, tf.float32) + 1.0)  # [bins]
    read_at = warp_hertz(_mel_to_hertz(centres)[None, :], alpha, sample_rate / 2.0)
    position = (_hertz_to_mel(read_at) - low) / spacing - 1.0  # [batch, bins], band index
    position = tf.clip_by_value(position, 0.0, tf.cast(bins - 1, tf.float32))
    below = tf.minimum(tf.cast(tf.floor(position), tf.int32), bins - 2)
    fraction = (position - tf.cast(below, tf.float32))[:, None, :, None]
    lower = tf.gather(log_mel, below, axis=2, batch_dims=1)
    upper = tf.gather(log_mel, below + 1, axis=2, batch_dims=1)
    return lower + fraction * (upper - lower)
