"""The input pipeline: shards -> parsed, featurized, length-filtered, bucketed batches.

Everything is a TF graph, so it runs on a TPU host. Batches are per replica:
`batch_size` is a budget in the problem's length unit (tokens; frames x mel
bins for speech) or, with `use_fixed_batch_size`, a number of examples, which
`fixed_batch_length_budget` (a t2t-lite hparam, 0 = off) caps in the buckets
of long examples: a bucket whose examples are up to `L` long gets
`min(batch_size, fixed_batch_length_budget // L)`, so long utterances are
trained on in smaller batches instead of dropped, and memory stays bounded.
Which examples are dropped for their length is `length_policy`'s rule.
T2T's bucketing is kept: bucket boundaries grow from `min_length_bucket` by
`length_bucket_step` up to `max_length`, and a bucket whose examples are
shorter than `boundary` gets `batch_size // boundary` examples, so a padded
batch never exceeds the budget.

With `static_shapes=True` (TPU, XLA) every batch is padded to its bucket's
boundary and partial batches are dropped, so batch shapes come from the
small fixed set `static_batch_shapes` describes. XLA (and a TPU) compiles
the training step once per distinct shape, so static mode does not use
T2T's geometric buckets (108 of them for `transformer_librispeech_tpu`):
it splits lengths up to `max_length` into `static_length_buckets`
equal-width buckets (a t2t-lite hparam; 1 is T2T's TPU input, every batch
padded to the maximum lengths; 0 keeps T2T's buckets).
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf
from absl import logging

from t2t_lite.data.dataset_options import without_autotuning
from t2t_lite.data.length_policy import (
    DROP_REASONS,
    active_limits,
    checked_lengths,
    length_checks,
)
from t2t_lite.data.mixed_problem import MixedProblem
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError, Problem
from t2t_lite.hparam import HParams

_AUTOTUNE = tf.data.AUTOTUNE
PIPELINE_HPARAMS = (
    "batch_size",
    "use_fixed_batch_size",
    "max_length",
    "min_length_bucket",
    "length_bucket_step",
    "max_input_seq_length",
    "max_target_seq_length",
    "eval_drop_long_sequences",
    "static_length_buckets",
    "fixed_batch_length_budget",
)


def bucket_boundaries(max_length: int, min_length: int = 8, step: float = 1.1) -> list[int]:
    """T2T's `_bucket_boundaries`: min_length, then x -> max(x + 1, int(x * step))."""
    if step <= 1.0:
        raise ValueError(f"hparam 'length_bucket_step' must be > 1, got {step}.")
    boundaries, x = [], min_length
    while x < max_length:
        boundaries.append(x)
        x = max(x + 1, int(x * step))
    return boundaries


def equal_width_boundaries(max_length: int, buckets: int) -> list[int]:
    """Boundaries of `buckets` equal-width buckets of lengths 1..max_length.

    Bucket `i` admits lengths up to `ceil(max_length * (i + 1) / buckets)`.
    """
    limits = sorted({-(-max_length * (i + 1) // buckets) for i in range(buckets)})
    return [limit + 1 for limit in limits if limit < max_length]


@dataclasses.dataclass(frozen=True)
class BatchingScheme:
    """Length buckets: their boundaries, batch sizes and (in static mode) padded lengths.

    Bucket `i` holds lengths in `[boundaries[i-1], boundaries[i])`, batched by
    `batch_sizes[i]` and (in static mode) padded to length `limits[i]`.
    """

    boundaries: list[int]
    batch_sizes: list[int]
    limits: list[int]  # the longest length each bucket admits

    @classmethod
    def from_hparams(cls, hparams: HParams, static: bool = False) -> BatchingScheme:
        """T2T's buckets, or in static-shape mode `static_length_buckets` of them."""
        max_length = hparams.max_length or hparams.batch_size
        buckets = hparams.get("static_length_buckets", 0) if static else 0
        if buckets < 0:
            raise ValueError(f"hparam 'static_length_buckets' must be >= 0, got {buckets}.")
        if buckets:
            boundaries = equal_width_boundaries(max_length, buckets)
        else:
            boundaries = bucket_boundaries(
                max_length, hparams.min_length_bucket, hparams.length_bucket_step
            )
        uppers = boundaries + [max_length + 1]
        if hparams.use_fixed_batch_size:
            # `batch_size` examples, fewer in buckets whose longest examples
            # would take the batch past `fixed_batch_length_budget`.
            budget = hparams.get("fixed_batch_length_budget", 0)
            batch_sizes = [
                min(hparams.batch_size, max(1, budget // upper)) if budget else hparams.batch_size
                for upper in uppers
            ]
        else:
            batch_sizes = [max(1, hparams.batch_size // upper) for upper in uppers]
        return cls(boundaries, batch_sizes, [upper - 1 for upper in uppers])


class DropCounter:
    """Counts examples dropped for being too long, per reason (logged by the trainer)."""

    def __init__(self):
        self.variables = {
            reason: tf.Variable(0, dtype=tf.int64, trainable=False, name=f"dropped_{reason}")
            for reason in DROP_REASONS
        }

    def counts(self) -> dict[str, int]:
        return {reason: int(v.numpy()) for reason, v in self.variables.items()}

    def total(self) -> int:
        return sum(self.counts().values())


def _length_filter(problem: Problem, hparams: HParams, mode: str, static: bool, counter):
    limits = active_limits(hparams, mode, static)

    def keep(features):
        lengths = checked_lengths(problem, problem.model_lengths(features), hparams)
        ok = tf.constant(True)
        for reason, within in length_checks(lengths, limits):
            if counter is not None:
                variable = counter.variables[reason]
                # Count only the first reason an example fails.
                tf.cond(
                    tf.logical_and(ok, tf.logical_not(within)),
                    lambda v=variable: v.assign_add(1),
                    lambda v=variable: v.read_value(),
                )
            ok = tf.logical_and(ok, within)
        return ok

    return keep


def _bucketed_batches(
    dataset, problem: Problem, hparams: HParams, scheme: BatchingScheme, static: bool
):
    boundaries = tf.constant(scheme.boundaries, tf.int32)
    batch_sizes = tf.constant(scheme.batch_sizes, tf.int64)
    limits = tf.constant(scheme.limits, tf.int32)

    def bucket_id(features):
        length = problem.batching_length(problem.model_lengths(features), hparams)
        return tf.cast(tf.reduce_sum(tf.cast(length >= boundaries, tf.int32)), tf.int64)

    def batch_bucket(bucket, window):
        batches = window.padded_batch(batch_sizes[bucket], drop_remainder=static)
        if not static:
            return batches
        # Pad further, to the bucket's limit: one shape per bucket.
        target = problem.padded_shapes(limits[bucket], hparams)
        return batches.map(lambda features: _pad_to(features, target))

    return dataset.group_by_window(
        key_func=bucket_id,
        reduce_func=batch_bucket,
        window_size_func=lambda bucket: batch_sizes[bucket],
    )


def _pad_to(features: dict, shapes: dict) -> dict:
    """Pads each batched feature's unknown dims up to the sizes in `shapes`."""
    padded = {}
    for name, value in features.items():
        if name not in shapes:
            padded[name] = value
            continue
        current = tf.shape(value)
        paddings = [[0, 0]]
        for axis, size in enumerate(shapes[name], start=1):
            extra = 0 if size is None else tf.maximum(size - current[axis], 0)
            paddings.append([0, extra])
        padded[name] = tf.pad(value, paddings)
    return padded


def static_batch_shapes(problem: Problem, hparams: HParams) -> list[dict]:
    """Every batch shape the static-shape pipeline can produce, per bucket."""
    scheme = BatchingScheme.from_hparams(hparams, static=True)
    shapes = []
    for limit, size in zip(scheme.limits, scheme.batch_sizes, strict=True):
        padded = problem.padded_shapes(limit, hparams)
        shapes.append({name: [size] + list(shape) for name, shape in padded.items()})
    return shapes


def static_shapes_summary(problem: Problem, hparams: HParams) -> str:
    """One line: how many distinct batch shapes static mode makes, and which."""
    spec = problem.batch_spec(hparams)
    distinct = []
    for shape in static_batch_shapes(problem, hparams):
        for name, dims in shape.items():  # fill the dims the batch keeps, where static
            known = spec[name].shape.as_list() if name in spec else [None] * len(dims)
            shape[name] = [d if d is not None else k for d, k in zip(dims, known, strict=True)]
        if shape not in distinct:
            distinct.append(shape)
    described = "; ".join(
        ", ".join(
            f"{name} [{'x'.join('?' if d is None else str(d) for d in dims)}]"
            for name, dims in sorted(shape.items())
        )
        for shape in distinct
    )
    return (
        f"static shapes: {len(distinct)} distinct batch shapes (XLA and a TPU compile "
        f"the training step once per shape): {described}"
    )


def _records(
    problem: Problem,
    mode: str,
    data_dir: str,
    input_context: tf.distribute.InputContext | None,
    shuffle: bool,
    repeat: bool,
    seed: int | None,
    hparams: HParams,
) -> tf.data.Dataset:
    """The split's serialized records, shuffled and repeated as asked.

    They come from its shards (this pipeline's share). A mixed problem's
    training records are drawn from each member's own stream by the run's
    mixing weights.
    """
    if isinstance(problem, MixedProblem) and mode == TRAIN:
        weights = problem.training_weights(hparams).tolist()
        members = [
            _records(member, mode, data_dir, input_context, shuffle, repeat, seed, hparams)
            for member in problem.member_problems
        ]
        return tf.data.Dataset.sample_from_datasets(members, weights=weights, seed=seed)
    files = problem.require_data(data_dir, mode)
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if input_context is not None and input_context.num_input_pipelines > 1:
        pipelines = input_context.num_input_pipelines
        if len(files) < pipelines:
            raise DataError(
                f"{problem.name} has {len(files)} {mode} shard(s) but {pipelines} input "
                "pipelines; regenerate the data with more shards or use fewer workers."
            )
        dataset = dataset.shard(pipelines, input_context.input_pipeline_id)
    if shuffle:
        dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(len(files), 4),
        num_parallel_calls=_AUTOTUNE,
        deterministic=not shuffle,
    )
    if shuffle:
        dataset = dataset.shuffle(problem.shuffle_buffer_size, seed=seed)
    return dataset


def _others(problem: Problem, hparams: HParams, data_dir: str, seed: int | None) -> tuple:
    """Batches of `problem.others_wanted` other training examples, decoded and ragged.

    They come from a second shuffled pass over the training records: one
    stream, or none when the problem wants none.
    """
    wanted = problem.others_wanted(hparams)
    if not wanted:
        return ()
    others_seed = None if seed is None else seed + 1
    records = _records(problem, TRAIN, data_dir, None, True, True, others_seed, hparams)
    decoded = records.map(problem.decode_example, num_parallel_calls=_AUTOTUNE)
    return (decoded.ragged_batch(wanted),)


def make_dataset(
    problem: Problem,
    mode: str,
    data_dir: str,
    hparams: HParams,
    input_context: tf.distribute.InputContext | None = None,
    static_shapes: bool = False,
    shuffle: bool | None = None,
    repeat: bool | None = None,
    seed: int | None = None,
    drop_counter: DropCounter | None = None,
) -> tf.data.Dataset:
    """Batched model features of `problem`'s `mode` split ("train", "dev", "test").

    Args:
        problem: the problem whose shards are read.
        mode: which split; training shuffles, repeats and augments.
        data_dir: where datagen wrote the shards.
        hparams: batching and length hparams (plus the problem's own).
        input_context: from `tf.distribute`; each input pipeline reads a
            disjoint subset of the shards.
        static_shapes: pad each batch to its bucket's boundary and drop
            partial batches (TPU/XLA).
        shuffle, repeat: default to `mode == "train"`.
        seed: makes shuffling and augmentation repeatable.
        drop_counter: counts examples dropped for their length.

    Returns:
        A `tf.data.Dataset` of feature dicts, per-replica batches.

    Raises:
        DataError: no shards, or fewer shards than input pipelines.
    """
    if mode not in (TRAIN, EVAL, TEST):
        raise ValueError(f"unknown mode {mode!r}; use {TRAIN}, {EVAL} or {TEST}.")
    training = mode == TRAIN
    shuffle = training if shuffle is None else shuffle
    repeat = training if repeat is None else repeat
    dataset = _records(problem, mode, data_dir, input_context, shuffle, repeat, seed, hparams)

    if training:
        # A per-example seed keeps dither and SpecAugment repeatable.
        seeds = tf.data.Dataset.random(seed=seed).batch(2)
        streams = (dataset, seeds, *_others(problem, hparams, data_dir, seed))
        dataset = tf.data.Dataset.zip(streams)
        featurize = lambda record, example_seed, others=None: problem.preprocess_example(  # noqa: E731
            problem.decode_example(record), mode, hparams, seed=example_seed, others=others
        )
    else:
        featurize = lambda record: problem.preprocess_example(  # noqa: E731
            problem.decode_example(record), mode, hparams
        )
    dataset = dataset.map(featurize, num_parallel_calls=_AUTOTUNE, deterministic=not shuffle)
    dataset = dataset.filter(_length_filter(problem, hparams, mode, static_shapes, drop_counter))
    scheme = BatchingScheme.from_hparams(hparams, static=static_shapes)
    dataset = _bucketed_batches(dataset, problem, hparams, scheme, static_shapes)
    logging.log_first_n(
        logging.INFO,
        "%s %s pipeline: %d buckets, batch sizes %s..%s",
        1,
        problem.name,
        mode,
        len(scheme.batch_sizes),
        min(scheme.batch_sizes),
        max(scheme.batch_sizes),
    )
    options = tf.data.Options()
    # An example's ops are small: one thread each, with parallelism across
    # examples (`num_parallel_calls`), featurizes twice as fast on two cores
    # as splitting every op across the intra-op threads.
    options.threading.max_intra_op_parallelism = 1
    # No autotuning thread (`dataset_options` says why): on two cores the
    # pipeline makes 665 utterances/s without it against 680 with it,
    # thirteen times what training reads.
    return without_autotuning(dataset.prefetch(_AUTOTUNE).with_options(options))
