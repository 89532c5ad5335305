"""Long recordings: split at pauses into pieces the model can transcribe.

An attention model does not generalize far past the utterance lengths it was
trained on (the quick start's model, trained on 1-5 s commands, loses most
words of a 13 s recording), and a whole hour at once would not fit in
memory. So a recording longer than `segment_seconds` is cut into pieces:

1. at every pause: a run of at least `MIN_PAUSE_SECONDS` (pause_split.py) of 10 ms frames
   whose energy is `PAUSE_DB` below the recording's speech level (its 90th
   percentile frame energy), cut in the middle;
2. a piece still longer than `segment_seconds` (no pause in it) is cut at
   its quietest 100 ms within the last half of the allowed length, so that
   cuts land between words where the audio allows.

The rules' constants and frame arithmetic are `pause_split.py`'s, which
applies the same rules in NumPy for runners without TensorFlow.
Recordings up to `segment_seconds` are one piece, decoded exactly as before.
The pieces of a batch are decoded together and each recording's text is its
pieces' texts joined with spaces, in order. Everything is TF ops on
waveforms, so the SavedModel and the decoder CLI run the same graph.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.decoding.audio.pause_split import (
    PAUSE_DB,
    SMOOTH_FRAMES,
    SPEECH_PERCENTILE,
    frame_sizes,
)


def _frame_energy_db(waveform: tf.Tensor, length: tf.Tensor, hop: int) -> tf.Tensor:
    """dB energy of each whole `hop`-sample frame of the real samples."""
    frames = length // hop
    framed = tf.reshape(waveform[: frames * hop], [frames, hop])
    energy = tf.reduce_mean(tf.square(framed), axis=1)
    return 10.0 * tf.math.log(energy + 1e-10) / tf.math.log(10.0)


def _pause_centres(energy_db: tf.Tensor, min_pause_frames: int, pause_db: float) -> tf.Tensor:
    """Frame indices of the middles of interior pauses, ascending."""
    num_frames = tf.shape(energy_db)[0]
    ranked = tf.sort(energy_db)
    level_index = tf.cast(SPEECH_PERCENTILE * tf.cast(num_frames - 1, tf.float32), tf.int32)
    quiet = energy_db < ranked[level_index] - pause_db
    # Runs of equal quiet/loud frames: their start, length and kind.
    change = tf.concat([[True], quiet[1:] != quiet[:-1]], axis=0)
    run_id = tf.cumsum(tf.cast(change, tf.int32)) - 1
    starts = tf.boolean_mask(tf.range(num_frames), change)
    lengths = tf.math.segment_sum(tf.ones_like(run_id), run_id)
    run_quiet = tf.boolean_mask(quiet, change)
    # Leading and trailing silence separate nothing.
    interior = (starts > 0) & (starts + lengths < num_frames)
    pause = run_quiet & interior & (lengths >= min_pause_frames)
    return tf.boolean_mask(starts + lengths // 2, pause)


def piece_ends(
    waveform: tf.Tensor,
    length: tf.Tensor,
    sample_rate: int,
    segment_seconds: float,
) -> tf.Tensor:
    """Where each piece of one recording ends, in samples (the last is `length`).

    Args:
        waveform: float32 `[samples]` (padding past `length` is ignored).
        length: scalar int, the real samples.
        sample_rate: samples per second.
        segment_seconds: the longest piece.

    Returns:
        int32 `[pieces]`, ascending; `[length]` for a recording that fits.
    """
    hop, max_frames, min_pause_frames = frame_sizes(sample_rate, segment_seconds)
    length = tf.cast(length, tf.int32)
    num_frames = length // hop

    def split():
        energy = _frame_energy_db(waveform, length, hop)
        pauses = _pause_centres(energy, min_pause_frames, PAUSE_DB)
        kernel = tf.ones([SMOOTH_FRAMES, 1, 1]) / SMOOTH_FRAMES
        smooth = tf.nn.conv1d(energy[None, :, None], kernel, 1, "SAME")[0, :, 0]
        ends = tf.TensorArray(tf.int32, size=0, dynamic_size=True)

        def body(start, ends):
            later = tf.boolean_mask(pauses, pauses > start)
            next_pause = tf.cond(tf.size(later) > 0, lambda: later[0], lambda: num_frames)
            hi = tf.minimum(start + max_frames, num_frames)
            lo = tf.minimum(start + max_frames // 2, hi - 1)
            quietest = lo + tf.argmin(smooth[lo:hi], output_type=tf.int32)
            end = tf.where(next_pause - start <= max_frames, next_pause, quietest)
            end = tf.where((next_pause >= num_frames) & (num_frames - start <= max_frames),
                           num_frames, end)  # fmt: skip
            return end, ends.write(ends.size(), end)

        _, ends = tf.while_loop(lambda start, _: start < num_frames, body, (0, ends))
        # The last piece runs to the last sample, not to the last whole frame.
        return tf.concat([ends.stack()[:-1] * hop, [length]], axis=0)

    return tf.cond(num_frames > max_frames, split, lambda: tf.reshape(length, [1]))


def split_recordings(
    waveforms: tf.Tensor, lengths: tf.Tensor, sample_rate: int, segment_seconds: float
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Cuts a batch of recordings into pieces (see the module docstring).

    Args:
        waveforms: float32 `[batch, samples]`, zero padded.
        lengths: int `[batch]` real samples.
        sample_rate: samples per second.
        segment_seconds: the longest piece.

    Returns:
        `(pieces [pieces, piece_samples] float32, piece_lengths [pieces] int32,
        rows [pieces] int32)`: the pieces zero padded, in order, with the row
        of the recording each came from. Every row has at least one piece.

    Example:
    ```python
    pieces, piece_lengths, rows = split_recordings(waveforms, lengths, 16000, 6.0)
    ```
    """
    waveforms = tf.convert_to_tensor(waveforms, tf.float32)
    lengths = tf.clip_by_value(tf.cast(lengths, tf.int32), 0, tf.shape(waveforms)[1])
    # One zero column, so that a request with no samples at all ([batch, 0])
    # still has a sample for the gathers below to read (and mask out).
    waveforms = tf.pad(waveforms, [[0, 0], [0, 1]])
    ends = tf.map_fn(
        lambda row: piece_ends(row[0], tf.cast(row[1][0], tf.int32), sample_rate, segment_seconds),
        (waveforms, tf.cast(lengths, tf.float32)[:, None]),
        fn_output_signature=tf.RaggedTensorSpec([None], tf.int32, ragged_rank=0),
    )
    starts = tf.concat([tf.zeros_like(ends[:, :1]), ends[:, :-1]], axis=1)
    rows = tf.cast(ends.value_rowids(), tf.int32)
    starts, ends = starts.flat_values, ends.flat_values
    piece_lengths = ends - starts
    width = tf.maximum(tf.reduce_max(piece_lengths), 1)
    positions = starts[:, None] + tf.range(width)[None, :]
    inside = positions < ends[:, None]
    indices = tf.stack([tf.broadcast_to(rows[:, None], tf.shape(positions)),
                        tf.where(inside, positions, 0)], axis=-1)  # fmt: skip
    pieces = tf.where(inside, tf.gather_nd(waveforms, indices), 0.0)
    return pieces, piece_lengths, rows


def join_pieces(texts: tf.Tensor, rows: tf.Tensor, num_rows) -> tf.Tensor:
    """Each row's non-empty piece texts joined with single spaces: string `[num_rows]`."""
    keep = tf.strings.length(texts) > 0
    grouped = tf.RaggedTensor.from_value_rowids(
        tf.boolean_mask(texts, keep), tf.boolean_mask(rows, keep), nrows=num_rows
    )
    return tf.strings.reduce_join(grouped, axis=1, separator=" ")


def piece_starts(piece_lengths: tf.Tensor, rows: tf.Tensor, num_rows) -> tf.Tensor:
    """Where each piece of `split_recordings` starts in its recording (samples).

    A recording's pieces are consecutive and cover it from its first sample,
    so a piece starts where the ones before it in its recording end.

    Example:
    >>> piece_starts(tf.constant([3, 4, 5, 2]), tf.constant([0, 0, 1, 1]), 2).numpy()
    array([0, 3, 0, 5], dtype=int32)
    """
    ends_before = tf.cumsum(tf.cast(piece_lengths, tf.int32), exclusive=True)
    row_start = tf.math.unsorted_segment_min(ends_before, rows, num_rows)
    return ends_before - tf.gather(row_start, rows)
