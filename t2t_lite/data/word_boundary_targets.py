"""The word boundary head's training targets: a corpus's word times on the feature frames.

A speech corpus that knows when each word was said (the built-in
`spoken_synth`: eSpeak NG's own word events) stores each utterance's word
starts and ends with its audio (`word_starts`, `word_ends`, seconds). A run
with hparam `word_boundary_loss_weight > 0` turns them into per-frame
targets, after the augmentation's stretch and the edge trim
(`speech_features.featurize_with_times`), for the `WordBoundaryHead`.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.problem import TRAIN
from t2t_lite.data.word_boundary_weight import WEIGHT_HPARAM, word_boundaries_wanted
from t2t_lite.hparam import HParams


def boundary_targets(start_positions, end_positions, num_frames) -> tf.Tensor:
    """float32 `[num_frames, 2]`: 1 at the frames nearest each word's start and end, else 0.

    Column 0 marks the frame nearest each word start and column 1 the frame
    nearest each word end; positions off the frames are dropped.

    Args:
        start_positions: float `[words]` fractional feature frames (a frame's
            window middle is at its index), from `featurize_with_times`.
        end_positions: float `[words]`, likewise.
        num_frames: the utterance's feature frames.

    Example:
    >>> boundary_targets([0.4, 2.6], [2.6, 9.0], 4).numpy().tolist()
    [[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]
    """
    columns = []
    for positions in (start_positions, end_positions):
        frames = tf.cast(tf.round(tf.cast(positions, tf.float32)), tf.int32)
        frames = tf.boolean_mask(frames, (frames >= 0) & (frames < num_frames))
        hits = tf.math.unsorted_segment_max(tf.ones_like(frames, tf.float32), frames, num_frames)
        columns.append(tf.maximum(hits, 0.0))  # frames without a hit hold the float minimum
    return tf.stack(columns, axis=1)


def has_word_times(problem, data_dir: str) -> bool:
    """Whether the problem's training shards hold word times for the head to learn.

    Reads the first training example only: a corpus has word times for all
    its utterances or for none, and shards written before the head existed
    have none.
    """
    files = problem.require_data(data_dir, TRAIN)[:1]
    for record in tf.data.TFRecordDataset(files).take(1):
        example = problem.decode_example(record)
        return "word_starts" in example and int(tf.size(example["word_starts"])) > 0
    return False


def no_word_times_message(problem, data_dir: str) -> str:
    """The sentence refusing a head on shards without word times."""
    return (
        f"hparam {WEIGHT_HPARAM} > 0 trains a word boundary head, but the {problem.name} "
        f"training shards in {data_dir} hold no word times: use a corpus that has them "
        f"(spoken_synth; regenerate its shards with t2t-lite-datagen if they predate word "
        f"times) or set {WEIGHT_HPARAM}=0."
    )


def check_word_times(problem, hparams: HParams, data_dir: str) -> None:
    """Refuses a run that trains a word boundary head on shards without word times.

    On training shards without word times (`has_word_times`) its head would
    learn that no word ever starts.

    Raises:
        ValueError: one sentence naming the problem and what to do.
    """
    if word_boundaries_wanted(hparams) and not has_word_times(problem, data_dir):
        raise ValueError(no_word_times_message(problem, data_dir))
