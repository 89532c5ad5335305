"""T2T's padded cross-entropy with label smoothing, and the auxiliary heads' losses.

The auxiliary losses are a CTC loss and the word boundary head's loss.

Each comes as a sum over the batch (with the count it sums over), so that
the train step can divide by the count of the global batch.
"""

import math

import tensorflow as tf

from t2t_lite.data.text_encoders import EOS_ID, PAD_ID
from t2t_lite.layers.tf_kernels import in_xla_context


def smoothing_entropy_constant(vocab_size: int, label_smoothing: float) -> float:
    """The entropy of the smoothed target distribution, T2T's `normalizing`.

    Subtracting it makes a perfect prediction of the smoothed targets cost 0.
    """
    if label_smoothing == 0.0:
        return 0.0
    confidence = 1.0 - label_smoothing
    low_confidence = label_smoothing / (vocab_size - 1)
    return -(
        confidence * math.log(confidence)
        + (vocab_size - 1) * low_confidence * math.log(low_confidence + 1e-20)
    )


def summed_cross_entropy(logits, labels, label_smoothing: float = 0.1):
    """`(sum of T2T's smoothed cross-entropy over non-padding tokens, token count)`.

    T2T's `padded_cross_entropy` with `smoothing_cross_entropy`: soft targets
    `1 - label_smoothing` on the label and `label_smoothing / (vocab - 1)`
    elsewhere, minus the constant entropy of those soft targets, weighted by
    `labels != 0`.

    Args:
        logits: `[batch, length, vocab]` (computed in float32).
        labels: `[batch, length]` int ids, 0 = padding.
        label_smoothing: T2T's `label_smoothing` hparam.

    Returns:
        `(loss_sum, num_tokens)`, both float32 scalars.
    """
    logits = tf.cast(logits, tf.float32)
    labels = tf.cast(labels, tf.int32)
    vocab_size = logits.shape[-1]
    confidence = 1.0 - label_smoothing
    low_confidence = label_smoothing / float(vocab_size - 1)
    soft_targets = tf.one_hot(labels, vocab_size, on_value=confidence, off_value=low_confidence)
    xent = tf.nn.softmax_cross_entropy_with_logits(labels=soft_targets, logits=logits)
    xent -= smoothing_entropy_constant(vocab_size, label_smoothing)
    weights = tf.cast(tf.not_equal(labels, PAD_ID), tf.float32)
    return tf.reduce_sum(xent * weights), tf.reduce_sum(weights)


def padded_cross_entropy(logits, labels, label_smoothing: float = 0.1):
    """Mean label-smoothed cross-entropy over non-padding target tokens.

    Args:
        logits: `[batch, length, vocab]` (computed in float32).
        labels: `[batch, length]` int ids, 0 = padding.
        label_smoothing: T2T's `label_smoothing` hparam.

    Returns:
        `(loss, num_tokens)`: the scalar float32 mean, and the float32 count
        of non-padding tokens it averages over (for weighting across replicas).

    Example:
    >>> loss, tokens = padded_cross_entropy(tf.zeros([1, 2, 4]), [[2, 0]])
    """
    loss_sum, num_tokens = summed_cross_entropy(logits, labels, label_smoothing)
    return loss_sum / tf.maximum(num_tokens, 1.0), num_tokens


def summed_ctc_loss(logits, logit_mask, labels, weights=None):
    """Sum over the batch of the CTC loss of `labels` given per-frame `logits`.

    The auxiliary loss of hybrid CTC/attention training (Watanabe et al.,
    2017): it makes the encoder align audio to characters on its own, which
    the attention decoder then finds instead of having to discover alignment
    through cross-attention. Blank is PAD_ID (0), a symbol no transcript
    holds; EOS and padding are dropped from the labels. An example whose
    frames cannot hold its labels (fewer frames than labels plus repeated
    pairs) has no CTC path: it contributes 0 rather than an infinite loss.

    Args:
        logits: `[batch, frames, vocab]` (computed in float32).
        logit_mask: `[batch, frames]`, 1 at real (right-padded) frames.
        labels: `[batch, length]` target ids ending in EOS, 0-padded.
        weights: optional `[batch]`: each example's loss is multiplied by
            its weight (0: not counted).

    Returns:
        float32 scalar: the summed negative log-likelihood.

    Example:
    >>> loss = summed_ctc_loss(tf.zeros([1, 4, 5]), tf.ones([1, 4]), [[3, 4, 1, 0]])
    """
    logits = tf.cast(logits, tf.float32)
    # One padding column more: a batch whose every label sequence was left
    # out (no phoneme target fitted: `[batch, 0]`) still has a column for the
    # kernel's placeholder, and the dense path its all-blank path.
    labels = tf.pad(tf.cast(labels, tf.int32), [[0, 0], [0, 1]])
    labels = tf.where(tf.equal(labels, EOS_ID), PAD_ID, labels)
    real = tf.not_equal(labels, PAD_ID)
    label_length = tf.reduce_sum(tf.cast(real, tf.int32), axis=1)
    repeats = tf.logical_and(real[:, 1:], tf.equal(labels[:, 1:], labels[:, :-1]))
    needed = label_length + tf.reduce_sum(tf.cast(repeats, tf.int32), axis=1)
    logit_length = tf.cast(tf.reduce_sum(tf.cast(logit_mask, tf.float32), axis=1), tf.int32)
    feasible = needed <= logit_length
    # An empty label sequence always has a path (all blanks), so the infeasible
    # examples stay finite (no NaN gradient) before being zeroed.
    label_length = tf.where(feasible, label_length, 0)
    if in_xla_context():
        # XLA has no kernel for TensorFlow's CTC op: the dense labels take
        # `tf.nn.ctc_loss`'s forward-backward written in TensorFlow ops.
        losses = tf.nn.ctc_loss(
            labels=labels,
            logits=logits,
            label_length=label_length,
            logit_length=logit_length,
            logits_time_major=False,
            blank_index=PAD_ID,
        )
    else:
        losses = _ctc_kernel_loss(logits, labels, label_length, logit_length)
    counted = tf.cast(feasible, tf.float32)
    if weights is not None:
        counted *= tf.cast(weights, tf.float32)
    return tf.reduce_sum(losses * counted)


def _ctc_kernel_loss(logits, labels, label_length, logit_length):
    """Each example's CTC loss by TensorFlow's CTC kernel, from sparse labels.

    40x the speed of `tf.nn.ctc_loss`'s dense path (its forward-backward
    written in TensorFlow ops) on a LibriSpeech batch on CPU
    (docs/benchmarks.md, "The CTC loss on TensorFlow's kernel"). The kernel
    takes blank as the last class and refuses an empty label sequence, so
    the logits are rolled and an example with no labels (an empty
    transcript, or one `summed_ctc_loss` found infeasible) is given one
    placeholder label and, in its place, the all-blank path's loss.
    """
    empty = tf.equal(label_length, 0)
    positions = tf.range(tf.shape(labels)[1])[None, :]
    placeholder = tf.where(tf.equal(positions, 0), EOS_ID, PAD_ID)
    labels = tf.where(empty[:, None], placeholder, labels)
    # Blank (PAD_ID, 0) last: every other class moves down one id.
    rolled = tf.concat([logits[:, :, 1:], logits[:, :, :1]], axis=-1)
    sparse = tf.sparse.from_dense(labels)  # drops the padding
    kernel_losses = tf.compat.v1.nn.ctc_loss(
        labels=tf.SparseTensor(sparse.indices, sparse.values - 1, sparse.dense_shape),
        inputs=rolled,
        sequence_length=logit_length,
        ignore_longer_outputs_than_inputs=True,
        time_major=False,
    )
    frames = tf.sequence_mask(logit_length, tf.shape(logits)[1], dtype=tf.float32)
    blank_log_probs = tf.nn.log_softmax(logits, axis=-1)[:, :, PAD_ID]
    all_blank = -tf.reduce_sum(blank_log_probs * frames, axis=1)
    return tf.where(empty, all_blank, kernel_losses)


# A word starts and ends about once in 30 feature frames: positives weigh
# this much more than negatives, so the head does not learn to say "no
# boundary" everywhere.
BOUNDARY_POSITIVE_WEIGHT = 10.0


def summed_boundary_loss(logits, targets, frame_lengths):
    """Sum over the batch of the word boundary head's loss, and the frames summed.

    A weighted sigmoid cross-entropy per feature frame and channel (word
    start, word end), positives weighted `BOUNDARY_POSITIVE_WEIGHT`, over the
    real frames only.

    Args:
        logits: float `[batch, frames, 2]` (`WordBoundaryHead`).
        targets: float `[batch, frames, 2]`, 1 where a word starts / ends
            (`data/word_boundary_targets.py`).
        frame_lengths: int `[batch]` real frames.

    Returns:
        `(loss_sum, frames)`: float32 scalars.

    Example:
    >>> total, frames = summed_boundary_loss(tf.zeros([1, 4, 2]), tf.zeros([1, 4, 2]), [3])
    >>> round(float(total), 3), float(frames)
    (4.159, 3.0)
    """
    logits = tf.cast(logits, tf.float32)
    targets = tf.cast(targets, tf.float32)
    real = tf.sequence_mask(frame_lengths, tf.shape(logits)[1], dtype=tf.float32)
    losses = tf.nn.weighted_cross_entropy_with_logits(targets, logits, BOUNDARY_POSITIVE_WEIGHT)
    return tf.reduce_sum(losses * real[:, :, None]), tf.reduce_sum(real)
