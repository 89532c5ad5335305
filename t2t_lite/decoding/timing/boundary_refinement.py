"""Word boundaries on the 10 ms feature frames: a best path through the boundary head's output.

The CTC alignment (`word_times.WordTimer`) places a word between the
encoder frames (40 ms) of its first and last token. A CTC head fires a
token once it has heard enough of it, and how late varies between trainings
(docs/design.md, "Word boundaries on the 10 ms frames") and within an
utterance (a piece's last token may wait for the end of its audio). A
model with a `WordBoundaryHead` also says, per 10 ms feature frame, how
likely a word starts or ends there.

The refined boundaries are the best path through the head's output: a
row's `2 * words` boundaries (start, end, start, end, ...) take the frames
that maximise

    sum over boundaries of  log(p(frame) + PROBABILITY_FLOOR)
                            - PULL_PER_FRAME * |frame - alignment's boundary|

subject to order (each boundary at or after the one before; a word at least
`MIN_WORD_FRAMES` long) and to the neighbours' CTC spans (a word's start at
or after the start of the previous word's first encoder frame, its end at or
before the end of the next word's last one, and the start at or before the
end of its own last one). A Viterbi pass over the boundaries, each step a
running maximum over the frames.

The CTC timing enters only as bounds and a weak pull (0.02 per 10 ms: a
boundary moves 100 ms from the alignment's for a head probability e^0.2 =
1.22 times higher), so the
head places the boundaries and the alignment only fixes which word is
which. A boundary the constraints leave no frame for (a word squeezed by
its neighbours, audio shorter than its words) takes the least-penalised one
(`OUT_OF_BOUNDS`); the result is then put in order and clipped to the audio
whatever the scores were. The constants were chosen on the quick start's
model over its dev split (the training voices; docs/benchmarks.md,
"Word timestamps").

All TF ops on padded `[batch, words]` tensors, for `transcribe_timed` and
`tf.function`.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.layers.speech_front_end import SpeechFrontEnd

# Added to the head's probability before the log: a frame the head rules out
# costs log(0.01) = -4.6, not -inf, so the pull and the bounds can still
# place a boundary the head missed.
PROBABILITY_FLOOR = 0.01
# What each feature frame between a boundary and the alignment's costs, in
# log-probability.
PULL_PER_FRAME = 0.02
# Feature frames from a word's start to its end, at least (60 ms).
MIN_WORD_FRAMES = 6
# Score of each frame outside a boundary's bounds: no head probability or
# pull can outweigh it, and it stays finite so a boundary with no frame
# inside its bounds still has a best one.
OUT_OF_BOUNDS = -1.0e4


def _running_best(values):
    """`(maximum, argmax)` over frames `0..f` for each frame `f` of `values`
    `[batch, frames]` (Hillis-Steele doubling: log2(frames) shifted maxima;
    TF has no cumulative maximum)."""
    frames = tf.shape(values)[1]
    index = tf.broadcast_to(tf.range(frames)[None, :], tf.shape(values))

    def body(shift, best, arg):
        earlier = tf.pad(best, [[0, 0], [shift, 0]], constant_values=-float("inf"))[:, :frames]
        earlier_arg = tf.pad(arg, [[0, 0], [shift, 0]])[:, :frames]
        take = earlier >= best  # ties: the earlier frame
        return shift * 2, tf.where(take, earlier, best), tf.where(take, earlier_arg, arg)

    _, best, arg = tf.while_loop(
        lambda shift, best, arg: shift < frames,
        body,
        (tf.constant(1), values, index),
        shape_invariants=(tf.TensorShape([]), values.shape, index.shape),
    )
    return best, arg


def _interleave(starts, ends):
    """`[batch, words]` twice -> `[batch, 2 * words]`: start, end, start, end, ..."""
    stacked = tf.stack([starts, ends], axis=2)
    return tf.reshape(stacked, [tf.shape(stacked)[0], -1])


def refine_word_boundaries(boundary_probs, frame_lengths, first, last, timed):
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

    Returns:
        `(starts, ends)`: int32 `[batch, words]` feature frames (a boundary
        at frame `j` is at the middle of frame `j`'s window), ordered within
        each row's timed words and inside `[0, frame_lengths - 1]`.

    Example:
    ```python
    starts, ends = refine_word_boundaries(probs, frame_lengths, first, last, timed)
    ```
    """
    frames_per_step, first_middle = SpeechFrontEnd.frames_per_output()
    half = frames_per_step // 2
    probs = tf.cast(boundary_probs, tf.float32)
    frames = tf.shape(probs)[1]
    timed = tf.convert_to_tensor(timed)
    # One untimed word more, so that every row has boundaries to pass along.
    first = tf.pad(tf.cast(first, tf.int32), [[0, 0], [0, 1]])
    last = tf.pad(tf.cast(last, tf.int32), [[0, 0], [0, 1]])
    real = tf.pad(timed, [[0, 0], [0, 1]])
    # Where the alignment put each word, in feature frames: its first encoder
    # frame's 40 ms begin, its last one's end.
    ctc_start = first_middle - half + frames_per_step * first
    ctc_end = first_middle + half + frames_per_step * last
    last_frame = tf.maximum(tf.cast(frame_lengths, tf.int32) - 1, 0)[:, None]

    def neighbour(values, shift, edge):
        """Each word's previous (`shift=1`) or next (`shift=-1`) word's value.

        `edge` where that word is untimed or there is none.
        """
        values = tf.where(real, values, edge)
        if shift == 1:
            return tf.pad(values[:, :-1], [[0, 0], [1, 0]], constant_values=edge)
        return tf.pad(values[:, 1:], [[0, 0], [0, 1]], constant_values=edge)

    floor = tf.minimum(tf.maximum(neighbour(ctc_start, 1, 0), 0), last_frame)
    start_ceiling = tf.minimum(ctc_end, last_frame)
    end_ceiling = tf.minimum(neighbour(ctc_end, -1, tf.int32.max), last_frame)
    lower = _interleave(floor, floor)  # an end is after its start: the path's order
    upper = tf.maximum(_interleave(start_ceiling, end_ceiling), lower)
    anchor = _interleave(ctc_start, ctc_end)
    real_boundaries = _interleave(real, real)
    log_probs = tf.math.log(probs + PROBABILITY_FLOOR)  # [batch, frames, 2]
    frame = tf.range(frames)[None, :]

    count = tf.shape(anchor)[1]
    columns = tf.transpose(tf.stack([lower, upper, anchor], axis=0), [2, 0, 1])  # [2w, 3, batch]
    real_columns = tf.transpose(real_boundaries)  # [2w, batch]

    def step(number, best, best_arg, pointers):
        """Boundary `number`: the best path's score with it at each frame.

        Also where the boundary before it is on that path. `best` and
        `best_arg` come in as the running best over the previous boundary's
        frames (its path's best score at or before each frame, and where).
        """
        lower, upper, anchor = tf.unstack(columns[number])
        is_end = number % 2 == 1
        score = tf.where(is_end, log_probs[:, :, 1], log_probs[:, :, 0])
        score -= PULL_PER_FRAME * tf.cast(tf.abs(frame - anchor[:, None]), tf.float32)
        inside = (frame >= lower[:, None]) & (frame <= upper[:, None])
        score += tf.where(inside, 0.0, OUT_OF_BOUNDS)
        # An end comes MIN_WORD_FRAMES after its start at least.
        gap = tf.where(is_end, MIN_WORD_FRAMES, 0)
        before = tf.pad(best, [[0, 0], [gap, 0]], constant_values=2 * OUT_OF_BOUNDS)[:, :frames]
        before_arg = tf.pad(best_arg, [[0, 0], [gap, 0]])[:, :frames]
        # A boundary of an untimed word passes the path along unchanged.
        real = real_columns[number][:, None]
        total = tf.where(real, score + before, best)
        pointer = tf.where(real, before_arg, best_arg)
        return (number + 1, *_running_best(total), pointers.write(number, pointer))

    start = tf.zeros_like(log_probs[:, :, 0])
    _, _, best_arg, pointers = tf.while_loop(
        lambda number, *_: number < count,
        step,
        (0, start, tf.zeros_like(start, tf.int32), tf.TensorArray(tf.int32, size=count)),
    )
    pointers = pointers.stack()  # [2w, batch, frames]

    def back(position, pointer):
        """The boundary before, given where this one is on the best path."""
        return tf.gather(pointer, position[:, None], batch_dims=1)[:, 0]

    final = best_arg[:, -1]  # the path's last boundary: its best frame
    earlier = tf.scan(back, pointers[1:], initializer=final, reverse=True)  # [2w - 1, batch]
    path = tf.transpose(tf.concat([earlier, final[None]], axis=0))  # [batch, 2w]
    # Whatever the scores: in order along each row (a masked prefix maximum,
    # no loop: rows may have no words) and inside the audio.
    path = tf.where(real_boundaries, path, -1)
    prefix = tf.range(count)[None, :] <= tf.range(count)[:, None]  # [2w, 2w]
    path = tf.reduce_max(tf.where(prefix[None], path[:, None, :], -1), axis=-1)
    path = tf.clip_by_value(path, 0, last_frame)
    path = tf.reshape(path, [tf.shape(path)[0], -1, 2])[:, :-1]  # the extra word dropped
    return path[:, :, 0], path[:, :, 1]
