"""Speed perturbation (Kaldi's and ESPnet's 0.9 / 1.0 / 1.1) by band-limited resampling."""

from __future__ import annotations

import fractions
from collections.abc import Sequence

import tensorflow as tf

from t2t_lite.data.audio_augment.draws import uniform_index
from t2t_lite.data.audio_augment.waveform import as_waveform, clip_to_unit_range, next_fast_length
from t2t_lite.data.random_seeds import stateless_seed

_MAX_DENOMINATOR = 64  # speed factors are taken as fractions p / q, q <= 64
_RESAMPLE_BLOCK = 64  # resampling FFT lengths are multiples of 64 * p (and 64 * q)
_RESAMPLE_MIN_PAD = 256  # zeros after the waveform, so its end rings into them


def speed_fraction(factor: float) -> fractions.Fraction:
    if not factor > 0:
        raise ValueError(f"Speed factors must be positive, got {factor}.")
    return fractions.Fraction(factor).limit_denominator(_MAX_DENOMINATOR)


def _resample_by_fraction(waveform: tf.Tensor, p: tf.Tensor, q: tf.Tensor) -> tf.Tensor:
    """Plays `waveform` p/q times faster: `round(n q / p)` samples, band-limited.

    The waveform, padded with at least `_RESAMPLE_MIN_PAD` zeros to `N = j 64 p`
    samples (j 5-smooth), is transformed; the spectrum is cut (p > q) or
    zero-extended (p < q) to that of `M = j 64 q` samples, so every frequency
    is scaled by p/q and what would pass the new Nyquist frequency is removed
    (an ideal low-pass: no aliasing); the inverse transform is scaled by M/N
    to keep the amplitude. The bin at the shorter length's Nyquist frequency
    is dropped, as it has no unambiguous counterpart.
    """
    num_samples = tf.shape(waveform)[0]
    block_in, block_out = _RESAMPLE_BLOCK * p, _RESAMPLE_BLOCK * q
    blocks = next_fast_length((num_samples + _RESAMPLE_MIN_PAD + block_in - 1) // block_in)
    length_in, length_out = blocks * block_in, blocks * block_out
    padded = tf.pad(waveform, [[0, length_in - num_samples]])
    spectrum = tf.signal.rfft(padded)
    kept = tf.minimum(length_in, length_out) // 2
    # irfft zero-pads the spectrum up to length_out // 2 + 1 bins.
    resampled = tf.signal.irfft(spectrum[:kept], fft_length=length_out[tf.newaxis])
    resampled *= tf.cast(length_out, tf.float32) / tf.cast(length_in, tf.float32)
    num_out = 2 * tf.cast(num_samples, tf.int64) * tf.cast(q, tf.int64) + tf.cast(p, tf.int64)
    num_out = tf.cast(num_out // (2 * tf.cast(p, tf.int64)), tf.int32)
    return clip_to_unit_range(resampled[:num_out])


def speed_perturb(waveform, factors: Sequence[float], seed=None) -> tf.Tensor:
    """Speed perturbation (Kaldi, ESPnet): resample to play one random factor faster.

    Draws one of `factors` uniformly and resamples the waveform so that it
    plays `factor` times faster at the same sample rate, as sox's `speed`
    effect does: `round(len / factor)` samples, tempo and pitch both scaled by
    `factor`. Resampling is band-limited (FFT-based: the spectrum is cut or
    zero-extended, see `_resample_by_fraction`), so speeding up does not alias
    content above the new Nyquist frequency back into the band. Each factor
    is used as the nearest fraction with a denominator <= 64 (exact for 0.9
    and 1.1). A drawn factor of 1.0 returns the input unchanged, bit for bit;
    other outputs are clipped to [-1, 1].

    Args:
      waveform: float32 `[samples]`, one utterance.
      factors: Python floats > 0, e.g. `[0.9, 1.0, 1.1]`.
      seed: an int `[2]` seed (tensor or list) or a Python int; None draws a
        fresh one (not repeatable).

    Returns:
      float32 `[round(samples / factor)]`.

    Example:
      >>> speed_perturb(tf.zeros([16000]), [1.1], seed=[1, 2]).shape
      TensorShape([14545])
      >>> speed_perturb(tf.zeros([16000]), [0.9], seed=[1, 2]).shape
      TensorShape([17778])
    """
    waveform = as_waveform(waveform)
    if not factors:
        raise ValueError("speed_perturb needs at least one factor.")
    fractions_ = [speed_fraction(float(factor)) for factor in factors]
    if all(fraction == 1 for fraction in fractions_):
        return waveform
    index = uniform_index(stateless_seed(seed), len(fractions_))
    p = tf.gather(tf.constant([f.numerator for f in fractions_], tf.int32), index)
    q = tf.gather(tf.constant([f.denominator for f in fractions_], tf.int32), index)
    return tf.cond(
        tf.equal(p, q),
        lambda: waveform,
        lambda: _resample_by_fraction(waveform, p, q),
    )
