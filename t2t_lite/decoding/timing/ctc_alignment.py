"""CTC forced alignment: the best path of a known label sequence through CTC posteriors.

Given a model's per-frame CTC log-probabilities and the labels of a
transcript (a decoded hypothesis, or a reference), the Viterbi alignment is
the most probable frame-by-frame path of blanks and labels that collapses to
exactly those labels (Graves et al., 2006, with max in place of sum). Each
label then owns the frames the path spends on it: its first and last frame
are when it was said, and the posteriors on those frames are how sure the
model was. ESPnet's CTC segmentation and NeMo's forced aligner do the same
over the same kind of posteriors.

`ctc_forced_align` is batched TF ops (a `tf.while_loop` forward, one backward
pass), runs under `tf.function`, inside a SavedModel and under XLA, and
masks frames past each row's length and labels past each row's count.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

_NEG_INF = -1e30  # finite: (-inf) - (-inf) would make NaN in the comparisons


class LabelSpans(NamedTuple):
    """Where each label of a forced alignment sits, `[batch, labels]` each.

    Attributes:
        first_frame: int32, the first frame the best path spends on the label.
        last_frame: int32, the last one (inclusive).
        mean_log_prob: float32, the mean log-probability of the label over
            its frames (its confidence; `exp` of it is a geometric mean).
        min_log_prob: float32, the lowest log-probability over its frames.
        path_log_prob: float32 `[batch]`, the best path's log-probability
            (`-inf`-like, below -1e29, when the labels cannot fit the frames).
    """

    first_frame: tf.Tensor
    last_frame: tf.Tensor
    mean_log_prob: tf.Tensor
    min_log_prob: tf.Tensor
    path_log_prob: tf.Tensor


def _extended_labels(labels: tf.Tensor, blank_id: int) -> tf.Tensor:
    """`[batch, labels]` -> `[batch, 2 * labels + 1]`: a blank before, between and after."""
    batch, length = tf.shape(labels)[0], tf.shape(labels)[1]
    blanks = tf.fill([batch, length], blank_id)
    interleaved = tf.reshape(tf.stack([blanks, labels], axis=2), [batch, 2 * length])
    return tf.concat([interleaved, tf.fill([batch, 1], blank_id)], axis=1)


def ctc_forced_align(
    log_probs,
    frame_lengths,
    labels,
    label_lengths,
    blank_id: int = 0,
) -> LabelSpans:
    """Viterbi alignment of `labels` to per-frame CTC `log_probs`.

    Args:
        log_probs: float `[batch, frames, vocab]` log-probabilities (a
            log-softmax over the vocabulary, blank included).
        frame_lengths: int `[batch]` real frames per row.
        labels: int `[batch, labels]` label ids, no blanks among the first
            `label_lengths` of a row (what follows is ignored).
        label_lengths: int `[batch]` labels per row.
        blank_id: the CTC blank (t2t-lite's PAD_ID, 0).

    Returns:
        `LabelSpans`, with frames counted from each row's first frame. A label
        past a row's count, or in a row whose labels cannot fit its frames
        (fewer frames than labels plus repeated neighbours), gets frames
        `(0, -1)` and log-probabilities 0.

    Example:
    ```python
    # 6 frames whose best path is "_ a a _ b _" for the labels [a, b]
    spans = ctc_forced_align(log_probs, [6], [[a, b]], [2])
    spans.first_frame  # [[1, 4]]
    spans.last_frame   # [[2, 4]]
    ```
    """
    log_probs = tf.cast(log_probs, tf.float32)
    labels = tf.cast(labels, tf.int32)
    frame_lengths = tf.cast(frame_lengths, tf.int32)
    label_lengths = tf.cast(label_lengths, tf.int32)
    batch, frames = tf.shape(log_probs)[0], tf.shape(log_probs)[1]
    num_labels = tf.shape(labels)[1]
    labels = tf.where(tf.sequence_mask(label_lengths, num_labels), labels, blank_id)
    extended = _extended_labels(labels, blank_id)  # [batch, states]
    states = 2 * num_labels + 1
    # A label state may skip the blank before it unless it repeats the label
    # two states back (CTC needs a blank between equal labels).
    previous_label = tf.pad(extended[:, :-2], [[0, 0], [2, 0]], constant_values=blank_id)
    can_skip = (extended != blank_id) & (extended != previous_label)
    real_state = tf.sequence_mask(2 * label_lengths + 1, states)
    # Per frame, the log-probability of each state's symbol: [frames, batch, states].
    emissions = tf.gather(log_probs, extended, axis=2, batch_dims=1)
    emissions = tf.transpose(emissions, [1, 0, 2])
    emissions = tf.where(real_state[None], emissions, _NEG_INF)

    def shifted(scores, by):
        return tf.pad(scores[:, :-by], [[0, 0], [by, 0]], constant_values=_NEG_INF)

    # Forward (Viterbi): best score of a path ending in each state at frame
    # t, and which of stay / advance one / skip a blank it came from.
    initial = tf.where(tf.range(states)[None, :] < 2, emissions[0], _NEG_INF)
    choices = tf.TensorArray(tf.int32, size=frames, element_shape=None)
    choices = choices.write(0, tf.zeros([batch, states], tf.int32))

    def forward(t, scores, choices):
        candidates = tf.stack(
            [scores, shifted(scores, 1), tf.where(can_skip, shifted(scores, 2), _NEG_INF)],
            axis=-1,
        )  # [batch, states, 3]
        choice = tf.argmax(candidates, axis=-1, output_type=tf.int32)
        best = tf.reduce_max(candidates, axis=-1) + emissions[t]
        # Rows already past their last frame keep their scores (and stay put).
        live = (t < frame_lengths)[:, None]
        return (
            t + 1,
            tf.where(live, best, scores),
            choices.write(t, tf.where(live, choice, 0)),
        )

    _, final, choices = tf.while_loop(
        lambda t, *_: t < frames, forward, (tf.constant(1), initial, choices)
    )
    choices = choices.stack()  # [frames, batch, states]

    # The path ends in the last blank or the last label.
    last_state = 2 * label_lengths
    end_blank = tf.gather(final, last_state, batch_dims=1)
    end_label = tf.gather(final, tf.maximum(last_state - 1, 0), batch_dims=1)
    end_on_label = (label_lengths > 0) & (end_label > end_blank)
    path_log_prob = tf.maximum(end_blank, tf.where(label_lengths > 0, end_label, _NEG_INF))
    feasible = (path_log_prob > 0.5 * _NEG_INF) & (frame_lengths > 0)
    end_state = tf.where(end_on_label, last_state - 1, last_state)

    # Backward: from the end state at the last frame, follow the choices.
    path = tf.TensorArray(tf.int32, size=frames)

    def backward(t, state, path):
        path = path.write(t, state)
        step_back = tf.gather(choices[t], state, batch_dims=1)
        return t - 1, state - step_back, path

    _, _, path = tf.while_loop(lambda t, *_: t >= 0, backward, (frames - 1, end_state, path))
    path = tf.transpose(path.stack())  # [batch, frames]: each frame's state

    # Each label state 2k+1 owns the frames the path spends on it.
    on_label = (path % 2 == 1) & tf.sequence_mask(frame_lengths, frames)
    on_label &= feasible[:, None]
    label_index = tf.where(on_label, path // 2, num_labels)  # num_labels: no label
    segments = tf.range(batch)[:, None] * (num_labels + 1) + label_index
    count = batch * (num_labels + 1)
    frame_index = tf.broadcast_to(tf.range(frames)[None, :], [batch, frames])
    symbols = tf.gather(extended, path, batch_dims=1)  # [batch, frames]
    frame_log_prob = tf.gather(log_probs, symbols[:, :, None], batch_dims=2)[..., 0]

    def per_label(reduce, values):
        result = reduce(tf.reshape(values, [-1]), tf.reshape(segments, [-1]), count)
        return tf.reshape(result, [batch, num_labels + 1])[:, :num_labels]

    frames_on = per_label(tf.math.unsorted_segment_sum, tf.cast(on_label, tf.float32))
    spanned = frames_on > 0
    first_frame = per_label(tf.math.unsorted_segment_min, frame_index)
    last_frame = per_label(tf.math.unsorted_segment_max, frame_index)
    total = per_label(tf.math.unsorted_segment_sum, frame_log_prob)
    lowest = per_label(tf.math.unsorted_segment_min, frame_log_prob)
    return LabelSpans(
        first_frame=tf.where(spanned, first_frame, 0),
        last_frame=tf.where(spanned, last_frame, -1),
        mean_log_prob=tf.where(spanned, total / tf.maximum(frames_on, 1.0), 0.0),
        min_log_prob=tf.where(spanned, lowest, 0.0),
        path_log_prob=path_log_prob,
    )
