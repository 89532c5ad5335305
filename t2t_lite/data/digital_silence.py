"""Exact digital silence (runs of zeros): cut at a waveform's edges, read as a pause inside it.

Exact zeros are what edited clips, VAD-gated or silence-suppressed streams
and padding clients send. T2T's front end read them as log-mel at the log
floor in every bin and counted them in the per-utterance statistics, and a
model that had only met noisy audio invented words at their edges
(docs/design.md, "Digital silence"). `speech_features.featurize_batch`
applies these in order: `trim_digital_silence` before framing,
`digital_silence_frames` and `fill_digital_silence` after the log-mel, and
the normalization's statistics without the silent frames.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_features import num_feature_frames, samples_in


def sounding_span(waveforms, waveform_lengths) -> tuple[tf.Tensor, tf.Tensor]:
    """Where each row's sound is: from its first nonzero sample to its last.

    Args:
      waveforms: float32 `[batch, samples]`, finite.
      waveform_lengths: int `[batch]` real samples (at most `samples`).

    Returns:
      `(starts [batch], lengths [batch])` int32: the first nonzero sample and
      the samples up to and including the last nonzero one; `(0, 0)` for a
      row with no nonzero sample.

    Example:
      >>> starts, lengths = sounding_span([[0.0, 0.0, 0.5, 0.0, -0.5, 0.0]], [6])
      >>> starts.numpy(), lengths.numpy()
      (array([2], dtype=int32), array([3], dtype=int32))
    """
    waveforms = tf.convert_to_tensor(waveforms, tf.float32)
    num_samples = tf.shape(waveforms)[1]
    nonzero = tf.not_equal(waveforms, 0.0) & tf.sequence_mask(waveform_lengths, num_samples)
    any_sound = tf.reduce_any(nonzero, axis=1)
    # One zero column past the end: argmax needs a non-empty axis ([b, 0]).
    nonzero = tf.pad(tf.cast(nonzero, tf.int32), [[0, 0], [0, 1]])
    first = tf.argmax(nonzero, axis=1, output_type=tf.int32)
    last = num_samples - tf.argmax(tf.reverse(nonzero, [1]), axis=1, output_type=tf.int32)
    return tf.where(any_sound, first, 0), tf.where(any_sound, last + 1 - first, 0)


def trim_digital_silence(waveforms, waveform_lengths) -> tuple[tf.Tensor, tf.Tensor]:
    """Each row's leading and trailing exact zeros cut off, the rest moved to the front.

    Zeros before the first nonzero sample and after the last one carry no
    sound; they only shift where frames fall and add frames a model must read
    as something. Cut off, an utterance with exact zeros around it featurizes
    exactly as the utterance alone. A row with no nonzero sample gets length
    0. Zero runs inside a row stay (`fill_digital_silence`). Times in the
    result are `sounding_span`'s start later than in the input.

    Args:
      waveforms: float32 `[batch, samples]`, finite.
      waveform_lengths: int `[batch]` real samples (at most `samples`).

    Returns:
      `(waveforms [batch, samples], lengths [batch])`: each row from its first
      nonzero sample, zero past its new length.

    Example:
      >>> trimmed, lengths = trim_digital_silence([[0.0, 0.0, 0.5, 0.0, -0.5, 0.0]], [6])
      >>> trimmed.numpy()[0], lengths.numpy()
      (array([ 0.5,  0. , -0.5,  0. ,  0. ,  0. ], dtype=float32), array([3], dtype=int32))
    """
    waveforms = tf.convert_to_tensor(waveforms, tf.float32)
    num_samples = tf.shape(waveforms)[1]
    starts, lengths = sounding_span(waveforms, waveform_lengths)

    def shift():  # only when some row starts with zeros: a gather of the batch
        index = tf.minimum(starts[:, None] + tf.range(num_samples)[None, :], num_samples - 1)
        return tf.gather(waveforms, index, batch_dims=1)

    waveforms = tf.cond(tf.reduce_any(starts > 0), shift, lambda: waveforms)
    return waveforms * tf.sequence_mask(lengths, num_samples, dtype=tf.float32), lengths


def digital_silence_frames(
    waveforms: tf.Tensor,
    waveform_lengths: tf.Tensor,
    num_frames: int | tf.Tensor,
    sample_rate: float = 16000,
    frame_length: float = 25,
    frame_step: float = 10,
    preemphasis: float = 0.97,
) -> tf.Tensor:
    """Which frames of `compute_mel_filterbank_features` start in exact digital silence.

    Exact digital silence (edited clips, VAD-gated or silence-suppressed
    streams, padding clients) is not quiet speech or noise: its log-mel sits
    at the log floor in every bin, far below any recorded pause. A frame is
    silent when the frame step it starts with (its first 10 ms) is all exact
    zeros, found on the waveform as given, before dither, by counting nonzero
    samples (an integer count, so no rounding can hide a quiet sample). The
    frames of a sound are then those of the sound alone: an utterance's first
    frame starts at its first sample, and its last frames, part sound and
    part zeros, are what the last frames of every utterance are.

    Args:
      waveforms: float32 `[batch, samples]`.
      waveform_lengths: int `[batch]` real samples.
      num_frames: the feature frames to describe (static or a scalar tensor).
      sample_rate, frame_length, frame_step, preemphasis: as given to
        `compute_mel_filterbank_features` (the frame length does not matter).

    Returns:
      bool `[batch, num_frames]`: True for a real frame whose first frame step
      of real samples is exactly zero.

    Example:
      >>> waveforms = tf.concat([tf.zeros([1, 1600]), tf.ones([1, 1600])], axis=1)
      >>> digital_silence_frames(waveforms, [3200], 20).numpy()[0, :12].astype(int)
      array([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0])
    """
    del frame_length  # a frame's first step decides
    waveforms = tf.convert_to_tensor(waveforms, tf.float32)
    num_samples = tf.shape(waveforms)[1]
    lengths = tf.minimum(tf.cast(waveform_lengths, tf.int32), num_samples)
    step = samples_in(frame_step, sample_rate)
    # Frame i starts at sample i * step, so its first step is the i-th block
    # of `step` samples: count nonzero samples block by block (samples past
    # the length count as zeros; a real frame starts inside the length).
    needed = num_frames * step
    blocks = tf.pad(waveforms, [[0, 0], [0, tf.maximum(needed - num_samples, 0)]])[:, :needed]
    blocks *= tf.sequence_mask(lengths, needed, dtype=tf.float32)
    sounding = tf.reduce_any(tf.not_equal(tf.reshape(blocks, [-1, num_frames, step]), 0.0), -1)
    real = tf.sequence_mask(
        num_feature_frames(lengths, sample_rate, frame_step, preemphasis), num_frames
    )
    return real & ~sounding


def fill_digital_silence(
    log_mel: tf.Tensor,
    silent: tf.Tensor,
    nonpadding_mask: tf.Tensor,
    percentile: float = 10.0,
) -> tf.Tensor:
    """Log-mel frames of exact digital silence set to the utterance's own quiet level.

    Each silent frame takes, bin by bin, the `percentile`-th percentile of
    the utterance's real frames that are not silent: the level of its own
    pauses and background, as if the recording had gone on quietly. A model
    then reads a run of zeros as the pause it is, instead of as a wall at
    the log floor whose edges look like onsets (which made it invent words).
    An utterance with no sound at all is left as it is.

    Args:
      log_mel: float32 `[batch, frames, bins, 1]` from
        `compute_mel_filterbank_features`.
      silent: bool `[batch, frames]` from `digital_silence_frames`.
      nonpadding_mask: `[batch, frames]`, true for real frames.
      percentile: which level of the sounding frames fills the silent ones.

    Returns:
      float32 shaped like `log_mel`.

    Example:
      >>> log_mel = tf.constant([[1.0, 2.0, 3.0, -6.9]])[:, :, None, None]
      >>> filled = fill_digital_silence(log_mel, [[False, False, False, True]],
      ...                               [[True, True, True, True]], 0.0)
      >>> filled[0, :, 0, 0].numpy()
      array([1., 2., 3., 1.], dtype=float32)
    """
    log_mel = tf.convert_to_tensor(log_mel, tf.float32)
    silent = tf.cast(silent, tf.bool)

    def fill():
        sounding = tf.cast(nonpadding_mask, tf.bool) & ~silent  # [batch, frames]
        per_bin = tf.transpose(log_mel[:, :, :, 0], [0, 2, 1])  # [batch, bins, frames]
        ranked = tf.sort(tf.where(tf.expand_dims(sounding, 1), per_bin, np.inf), axis=-1)
        count = tf.reduce_sum(tf.cast(sounding, tf.int32), axis=1)  # [batch]
        index = tf.cast(tf.round(percentile / 100.0 * tf.cast(count - 1, tf.float32)), tf.int32)
        level = tf.gather(ranked, tf.maximum(index, 0), axis=2, batch_dims=1)  # [batch, bins]
        filled = silent & tf.expand_dims(count > 0, 1)  # [batch, frames]
        filled = tf.reshape(filled, tf.concat([tf.shape(filled), [1, 1]], axis=0))
        level = tf.expand_dims(tf.expand_dims(level, 1), -1)  # [batch, 1, bins, 1]
        return tf.where(filled, level, log_mel)

    # Recorded audio has no digital silence: skip the sort (most of the cost).
    return tf.cond(tf.reduce_any(silent), fill, lambda: log_mel)
