"""Featurization that never reads ahead: statistics of the frames so far.

Per-utterance normalization (`audio_features.normalize_per_utterance`) and
the digital-silence fill (`digital_silence.fill_digital_silence`) read the
whole utterance, so a streaming recognizer could not compute a frame until
the speaker stopped. With hparam `audio_causal_normalization` both read
running statistics instead: frame `t` is normalized by the mean and variance
of the sounding real frames `0..t`, and a frame of digital silence takes,
bin by bin, their mean minus `QUIET_STDS` standard deviations (the 10th
percentile of a normal distribution: the level the per-utterance fill takes
from its own percentile). A frame's features then depend on the audio up to
its own window and the delta-deltas' 4 frames of look-ahead only, as
streaming needs (Kaldi's online CMVN is the same idea over a sliding window).

An utterance's first frames would be normalized by a handful of frames
(the first by itself, to 0). With hparam `audio_normalization_prior_frames`
= N > 0 the running statistics start from the training set's, worth N
frames (`Prior`): WeNet's global CMVN, which is fixed, blended into running
statistics that follow the speaker. `normalization_prior.py` computes it
at the trainer's start; it is kept in the run's hparams
(`feature_config.store_prior`), so the decoder and every export featurize
with it.

Example:
>>> import tensorflow as tf
>>> features = tf.constant([1.0, 3.0, 5.0])[None, :, None, None]
>>> normalize_causally(features, tf.ones([1, 3]))[0, :, 0, 0].numpy().round(3)
array([0.   , 1.   , 1.225], dtype=float32)
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import tensorflow as tf

# z of the 10th percentile of a normal distribution.
QUIET_STDS = 1.2816
# Log-mel features are logs of magnitudes: 20 log10, so a dB is this many nats.
NATS_PER_DB = float(np.log(10.0) / 20.0)
# Added to the running variance: a frame's first statistics come from a
# handful of frames, and near-equal frames must not be blown up.
VARIANCE_FLOOR = 1e-3


@dataclasses.dataclass(frozen=True)
class Prior:
    """Statistics the running ones start from.

    They count as if `frames` frames of these had come before the first.

    Attributes:
        mean: float32 `[mel_bins, channels]`, the mean of unnormalized
            features (after the digital-silence fill and delta-deltas).
        mean_square: float32 `[mel_bins, channels]`, their mean square.
        frames: the weight of the prior in frames.
    """

    mean: np.ndarray
    mean_square: np.ndarray
    frames: int


def _as_frames(mask) -> tf.Tensor:
    """A `[batch, frames]` mask as float32 `[batch, frames, 1, 1]`."""
    return tf.expand_dims(tf.expand_dims(tf.cast(mask, tf.float32), -1), -1)


class Totals(NamedTuple):
    """Running sums of counted frames.

    They are what the statistics of the frames so far are made of, and what a
    stream carries from one chunk to the next.

    Attributes:
        count: float32 `[batch, 1, 1, 1]` frames counted.
        total: float32 `[batch, 1, bins, channels]` their sum.
        total_square: float32 `[batch, 1, bins, channels]` their sum of squares.
    """

    count: tf.Tensor
    total: tf.Tensor
    total_square: tf.Tensor

    @classmethod
    def start(cls, batch, bins: int, channels: int, prior: Prior | None = None) -> Totals:
        """No frame counted yet: zeros, or the prior's `frames` frames."""
        zeros = tf.zeros([batch, 1, bins, channels])
        if prior is None:
            return cls(tf.zeros([batch, 1, 1, 1]), zeros, zeros)
        frames = float(prior.frames)
        return cls(
            tf.fill([batch, 1, 1, 1], frames),
            zeros + frames * tf.constant(prior.mean, tf.float32),
            zeros + frames * tf.constant(prior.mean_square, tf.float32),
        )


def running_totals(values: tf.Tensor, weights: tf.Tensor, start: Totals):
    """Running statistics at every frame, and the totals after the last.

    `(mean, variance, count, totals)`: the statistics over `start`'s frames
    and frames `0..t` for every frame `t`, and the totals after the last.

    Args:
        values: float32 `[batch, frames, bins, channels]`.
        weights: float32 `[batch, frames, 1, 1]`, 1 for the frames counted.
        start: the totals of the frames before the first.

    Returns:
        mean and variance shaped like `values`, count `[batch, frames, 1, 1]`
        (where it is 0, before the first counted frame, mean and variance are
        0), and the `Totals` at the last frame (`start`'s with no frame).
    """
    count = start.count + tf.cumsum(weights, axis=1)
    total = start.total + tf.cumsum(values * weights, axis=1)
    total_square = start.total_square + tf.cumsum(tf.square(values) * weights, axis=1)
    safe = tf.maximum(count, 1.0)
    mean = total / safe
    variance = tf.maximum(total_square / safe - tf.square(mean), 0.0)
    end = Totals(
        start.count + tf.reduce_sum(weights, axis=1, keepdims=True),
        start.total + tf.reduce_sum(values * weights, axis=1, keepdims=True),
        start.total_square + tf.reduce_sum(tf.square(values) * weights, axis=1, keepdims=True),
    )
    return mean, variance, count, end


def running_statistics(values: tf.Tensor, weights: tf.Tensor, prior: Prior | None = None):
    """`(mean, variance, count)` over frames `0..t` for every frame `t`
    (`running_totals` from no frame, or from `prior.frames` frames of the prior).

    Args:
        values: float32 `[batch, frames, bins, channels]`.
        weights: float32 `[batch, frames, 1, 1]`, 1 for the frames counted.
        prior: optional statistics counted as `prior.frames` frames before
            the first.

    Returns:
        mean and variance shaped like `values`, count `[batch, frames, 1, 1]`.
    """
    start = Totals.start(tf.shape(values)[0], values.shape[2], values.shape[3], prior)
    return running_totals(values, weights, start)[:3]


def normalize_causally(
    features, nonpadding_mask, statistics_mask=None, prior: Prior | None = None
) -> tf.Tensor:
    """Each frame normalized by the running statistics of the frames up to it.

    Args:
        features: float32 `[batch, frames, bins, channels]`.
        nonpadding_mask: `[batch, frames]`, true for real frames.
        statistics_mask: optional `[batch, frames]`, the frames whose values
            count (the sounding ones); default the real frames.
        prior: optional training-set statistics the running ones start from.

    Returns:
        float32 shaped like `features`; padded frames are 0.
    """
    features = tf.convert_to_tensor(features, tf.float32)
    start = Totals.start(tf.shape(features)[0], features.shape[2], features.shape[3], prior)
    return normalize_from(features, nonpadding_mask, statistics_mask, start)[0]


def normalize_from(features, nonpadding_mask, statistics_mask, start: Totals):
    """`normalize_causally` continuing from the totals of earlier frames.

    For a stream's chunk: returns `(normalized, totals after the last frame)`.
    """
    real = _as_frames(nonpadding_mask)
    weights = real if statistics_mask is None else real * _as_frames(statistics_mask)
    mean, variance, _, end = running_totals(features, weights, start)
    return (features - mean) * real * tf.math.rsqrt(variance + VARIANCE_FLOOR), end


def quiet_frames(features, prior: Prior, floor_db: float) -> tf.Tensor:
    """Frames quieter than the prior's mean frame by more than `floor_db` dB.

    A frame is quiet when its mean log-mel is more than `floor_db` dB under the
    prior's (the training set's mean frame): the quiet before and between
    speech.

    Counted, a second of quiet before an utterance pulls its running mean far
    under its speech, and a stream's utterances begin with what is left of a
    pause (docs/benchmarks.md, "Silence before speech"). The floor is fixed
    (the training set's level), so it needs no statistics of the frames to
    come and costs one comparison a frame.

    Args:
        features: float32 `[batch, frames, bins, channels]`, channel 0 the
            log-mel (after the digital-silence fill).
        prior: the training set's statistics.
        floor_db: how far under the prior's mean frame a frame is quiet.

    Returns:
        bool `[batch, frames]`.
    """
    level = float(np.mean(prior.mean[:, 0]))
    energy = tf.reduce_mean(tf.convert_to_tensor(features, tf.float32)[..., 0], axis=-1)
    return energy < level - floor_db * NATS_PER_DB


def fill_digital_silence_causally(log_mel, silent, nonpadding_mask) -> tf.Tensor:
    """Frames of exact digital silence set to a quiet level of the sounding frames before them.

    The level is `QUIET_STDS` under their running mean, bin by bin.

    Args:
        log_mel: float32 `[batch, frames, bins, 1]`.
        silent: bool `[batch, frames]` from `digital_silence_frames`.
        nonpadding_mask: `[batch, frames]`, true for real frames.

    Returns:
        float32 shaped like `log_mel`; a silent frame with no sounding frame
        before it is left as it is.
    """
    log_mel = tf.convert_to_tensor(log_mel, tf.float32)
    start = Totals.start(tf.shape(log_mel)[0], log_mel.shape[2], 1)
    return fill_from(log_mel, silent, nonpadding_mask, start)[0]


def fill_from(log_mel, silent, nonpadding_mask, start: Totals):
    """`fill_digital_silence_causally` continuing from the totals of earlier sounding frames.

    For a stream's chunk: returns `(filled, totals after the last frame)`.
    """
    silent = tf.cast(silent, tf.bool)
    sounding = tf.cast(nonpadding_mask, tf.bool) & ~silent
    mean, variance, count, end = running_totals(log_mel, _as_frames(sounding), start)
    level = mean - QUIET_STDS * tf.sqrt(variance)
    fill = (_as_frames(silent) > 0) & (count > 0)
    return tf.where(fill, level, log_mel), end
