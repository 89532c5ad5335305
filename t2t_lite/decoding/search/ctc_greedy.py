"""Greedy (best-path) CTC decoding: one encoder pass, no decoder loop.

The most probable label at each frame, repeats merged, blanks dropped
(Graves et al. 2006). It is the fastest way to read a CTC head and the
`ctc_weight=1` decode mode; joint CTC/attention beam search
(`ctc_prefix_scorer.py`) is the accurate one.
"""

from __future__ import annotations

import tensorflow as tf


def ctc_greedy_decode(log_probs, lengths, blank_id: int = 0, eos_id: int = 1):
    """Best-path decoding of a batch of CTC posteriors, with static shapes.

    Args:
        log_probs: float `[batch, frames, vocab]` per-frame log posteriors.
        lengths: int `[batch]` real frames per item.
        blank_id: the CTC blank (t2t-lite's PAD_ID, 0).
        eos_id: end of sequence; never a CTC label, so it is dropped like a
            blank if a frame's best label is EOS, and written after the
            last label (the format beam search returns).

    Returns:
        `(ids [batch, frames + 1] int32, scores [batch] float32)`: the labels,
        EOS, then 0; and the log probability of the best path.

    Example:
    ```python
    # frames' best labels 5 5 0 5 7 -> "5 5 7"
    ids, scores = ctc_greedy_decode(log_probs, lengths)
    ```
    """
    log_probs = tf.cast(log_probs, tf.float32)
    batch, frames = tf.shape(log_probs)[0], tf.shape(log_probs)[1]
    mask = tf.sequence_mask(lengths, frames)
    best = tf.argmax(log_probs, axis=-1, output_type=tf.int32)  # [batch, frames]
    scores = tf.reduce_sum(tf.where(mask, tf.reduce_max(log_probs, axis=-1), 0.0), axis=1)
    previous = tf.concat([tf.fill([batch, 1], blank_id), best[:, :-1]], axis=1)
    keep = mask & (best != blank_id) & (best != eos_id) & (best != previous)
    # Compact the kept labels to the left of each row: label i of a row goes
    # to column i (a segment sum keeps the shapes static, unlike a ragged mask).
    column = tf.cumsum(tf.cast(keep, tf.int32), axis=1) - 1
    width = frames + 1
    row_start = tf.range(batch)[:, None] * width
    dump = batch * width  # where dropped frames go
    segment = tf.where(keep, row_start + column, dump)
    ids = tf.math.unsorted_segment_sum(
        tf.where(keep, best, 0), segment, num_segments=batch * width + 1
    )
    ids = tf.reshape(ids[:-1], [batch, width])
    count = tf.reduce_sum(tf.cast(keep, tf.int32), axis=1)
    ids += eos_id * tf.one_hot(count, width, dtype=tf.int32)
    return ids, scores
