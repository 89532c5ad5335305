"""T2T's padded cross-entropy with label smoothing."""

import math

import tensorflow as tf

PAD_ID = 0


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


def padded_cross_entropy(logits, labels, label_smoothing: float = 0.1):
    """Mean label-smoothed cross-entropy over non-padding target tokens.

    T2T's `padded_cross_entropy` with `smoothing_cross_entropy`: soft targets
    `1 - label_smoothing` on the label and `label_smoothing / (vocab - 1)`
    elsewhere, minus the constant entropy of those soft targets, weighted by
    `labels != 0` and divided by the number of non-padding tokens.

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
    logits = tf.cast(logits, tf.float32)
    labels = tf.cast(labels, tf.int32)
    vocab_size = logits.shape[-1]
    confidence = 1.0 - label_smoothing
    low_confidence = (1.0 - confidence) / float(vocab_size - 1)
    soft_targets = tf.one_hot(labels, vocab_size, on_value=confidence, off_value=low_confidence)
    xent = tf.nn.softmax_cross_entropy_with_logits(labels=soft_targets, logits=logits)
    xent -= smoothing_entropy_constant(vocab_size, label_smoothing)
    weights = tf.cast(tf.not_equal(labels, PAD_ID), tf.float32)
    num_tokens = tf.reduce_sum(weights)
    loss = tf.reduce_sum(xent * weights) / tf.maximum(num_tokens, 1.0)
    return loss, num_tokens
