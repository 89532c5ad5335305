"""Word boundaries placed on the 10 ms feature frames, within what the CTC alignment allows.

The CTC alignment (`word_times.WordTimer`) places a word between the
encoder frames (40 ms) of its first and last token; a CTC head fires a
token when it has heard enough of it, so starts come out late and every
boundary is quantized to 40 ms. A model with a `WordBoundaryHead` also says,
per 10 ms feature frame, how likely a word starts or ends there; each
boundary moves to the likeliest frame of a window around where the
alignment put it:

- a start searches `START_WINDOW` frames around the start of its first
  token's encoder frame, an end `END_WINDOW` frames around the end of its
  last token's. Starts lag (a token fires once enough of it was heard; an
  utterance's last word by 100-250 ms), so a start looks back as far as
  the previous word allows; a piece's first word looks up to
  `FIRST_START_AFTER` frames later instead, since a CTC head fires an
  utterance's first tokens on its first frames, wherever the word starts.
  The windows were chosen on the quick start's model over its dev split
  (the training voices) and the long split (docs/benchmarks.md);
- neither leaves the word's CTC span: a start stays after the start of the
  previous word's last encoder frame and before the end of the word's own
  last, an end after the start of the word's own first encoder frame and
  before the end of the next word's first; both stay inside the audio;
- boundaries stay in order (each start <= its end <= the next start): a
  start found before the previous word's end becomes that end, as one
  shared boundary (the words are said without a pause between them); and
  nothing passes the audio's last frame (the last encoder frame's 40 ms
  may reach past it).

All TF ops on padded `[batch, words]` tensors, for `transcribe_timed` and
`tf.function`.
"""

from __future__ import annotations

import tensorflow as tf

# (frames before, frames after) the alignment's boundary that a search reads.
START_WINDOW = (50, 4)
END_WINDOW = (10, 6)
# Frames after the alignment's start that a row's first word searches.
FIRST_START_AFTER = 40


def _best_in_window(probs, centre, lower, upper, before, after, most_after):
    """The frame in `[centre - before, centre + after] ∩ [lower, upper]` where
    `probs` `[batch, frames]` is highest; `centre` clipped to the bounds when
    the window misses them. `centre`, `lower`, `upper` and `after` (at most
    the int `most_after`) are int32 `[batch, words]`."""
    offsets = tf.range(-before, most_after + 1)
    candidates = centre[:, :, None] + offsets[None, None, :]  # [batch, words, width]
    inside = (candidates >= lower[:, :, None]) & (candidates <= upper[:, :, None])
    inside &= offsets[None, None, :] <= after[:, :, None]
    frames = tf.shape(probs)[1]
    values = tf.gather(probs, tf.clip_by_value(candidates, 0, frames - 1), batch_dims=1)
    values = tf.where(inside, values, -1.0)
    best = tf.gather(candidates, tf.argmax(values, axis=-1, output_type=tf.int32), batch_dims=2)
    fallback = tf.clip_by_value(centre, lower, tf.maximum(lower, upper))
    return tf.where(tf.reduce_any(inside, axis=-1), best, fallback)


def refine_word_boundaries(
    boundary_probs,
    frame_lengths,
    first,
    last,
    timed,
    frames_per_step: int,
    first_middle: int,
):
    """Word starts and ends on the feature frames.

    Args:
        boundary_probs: float `[batch, frames, 2]`: per feature frame, the
            probability that a word starts / ends there (`WordBoundaryHead`).
        frame_lengths: int `[batch]` real feature frames.
        first: int `[batch, words]`, each word's first encoder frame (the
            alignment's start).
        last: int `[batch, words]`, its last encoder frame.
        timed: bool `[batch, words]`, words the alignment placed (the first
            `n` of a row; the rest are ignored).
        frames_per_step: feature frames per encoder frame (4).
        first_middle: the feature frame at the middle of encoder frame 0 (7).

    Returns:
        `(starts, ends)`: int32 `[batch, words]` feature frames (a boundary
        at frame `j` is at the middle of frame `j`'s window), ordered within
        each row's timed words and inside `[0, frame_lengths - 1]`.

    Example:
    ```python
    starts, ends = refine_word_boundaries(probs, frame_lengths, first, last, timed, 4, 7)
    ```
    """
    probs = tf.cast(boundary_probs, tf.float32)
    first = tf.cast(first, tf.int32)
    last = tf.cast(last, tf.int32)
    half = frames_per_step // 2
    # Where each encoder frame's 40 ms begin and end, in feature frames.
    frame_start = first_middle - half + frames_per_step * first
    frame_end = first_middle + half + frames_per_step * last
    last_frame = tf.maximum(tf.cast(frame_lengths, tf.int32) - 1, 0)[:, None]
    last_start = first_middle - half + frames_per_step * last
    first_end = first_middle + half + frames_per_step * first

    def neighbour(values, shift, edge):
        """Each word's previous (`shift=1`) or next (`shift=-1`) timed word's
        value; `edge` where there is none."""
        values = tf.where(timed, values, edge)
        if shift == 1:
            return tf.pad(values[:, :-1], [[0, 0], [1, 0]], constant_values=edge)
        return tf.pad(values[:, 1:], [[0, 0], [0, 1]], constant_values=edge)

    big = tf.int32.max
    start_lower = tf.maximum(neighbour(last_start, 1, 0), 0)
    start_upper = tf.minimum(frame_end, last_frame)
    end_lower = tf.maximum(frame_start, 0)
    end_upper = tf.minimum(neighbour(first_end, -1, big), last_frame)
    first_word = tf.range(tf.shape(first)[1])[None, :] == 0
    start_after = tf.where(first_word, FIRST_START_AFTER, START_WINDOW[1]) + tf.zeros_like(first)
    end_after = tf.fill(tf.shape(first), END_WINDOW[1])
    searches = (  # column, centre, bounds, frames before, frames after (each, most)
        (0, frame_start, start_lower, start_upper, START_WINDOW[0], start_after, FIRST_START_AFTER),
        (1, frame_end, end_lower, end_upper, END_WINDOW[0], end_after, END_WINDOW[1]),
    )
    starts, ends = (_best_in_window(probs[:, :, column], *window) for column, *window in searches)
    # In order: each start after the ends before it, each end after its start.
    # Both bounds grow along a row, so a running maximum keeps every boundary
    # inside them.
    sequence = tf.reshape(tf.stack([starts, ends], axis=2), [tf.shape(starts)[0], -1])
    real = tf.reshape(tf.stack([timed, timed], axis=2), tf.shape(sequence))
    sequence = tf.where(real, sequence, -1)
    # A running maximum as a masked maximum over each prefix: [batch, 2w, 2w]
    # at most a few hundred boundaries, and no loop (rows may have no words).
    length = tf.shape(sequence)[1]
    prefix = tf.range(length)[None, :] <= tf.range(length)[:, None]
    ordered = tf.reduce_max(tf.where(prefix[None], sequence[:, None, :], -1), axis=-1)
    ordered = tf.reshape(ordered, tf.shape(tf.stack([starts, ends], axis=2)))
    # The last encoder frame's 40 ms may run past the audio's last frame.
    ordered = tf.minimum(ordered, last_frame[:, :, None])
    return (
        tf.where(timed, ordered[:, :, 0], starts),
        tf.where(timed, ordered[:, :, 1], ends),
    )
