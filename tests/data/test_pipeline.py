"""The input pipeline: budgets, static bucket shapes, length drops, sharding, order."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data import pipeline
from t2t_lite.data.problem import DataError


def hparams(**overrides):
    values = registry.hparams("transformer_tiny").parse("batch_size=256,max_length=48")
    return values.override_from_dict(overrides)


def test_bucket_boundaries_are_t2ts():
    assert pipeline.bucket_boundaries(20, 8, 1.1) == [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
    assert pipeline.bucket_boundaries(100, 8, 1.5) == [8, 12, 18, 27, 40, 60, 90]
    scheme = pipeline.BatchingScheme.from_hparams(hparams(length_bucket_step=1.5, max_length=100))
    assert scheme.batch_sizes == [256 // b for b in [8, 12, 18, 27, 40, 60, 90, 101]]
    assert scheme.limits == [7, 11, 17, 26, 39, 59, 89, 100]


def test_static_mode_cuts_max_length_into_static_length_buckets():
    assert pipeline.equal_width_boundaries(48, 4) == [13, 25, 37]
    assert pipeline.equal_width_boundaries(132000, 4) == [33001, 66001, 99001]
    values = hparams()  # max_length 48, a budget of 256
    static = pipeline.BatchingScheme.from_hparams(values, static=True)
    assert static.limits == [12, 24, 36, 48]
    assert static.batch_sizes == [256 // 13, 256 // 25, 256 // 37, 256 // 49]
    t2t = pipeline.BatchingScheme.from_hparams(values)  # dynamic shapes keep T2T's buckets
    assert len(t2t.limits) == len(pipeline.bucket_boundaries(48, 8, 1.1)) + 1 == 24
    values.static_length_buckets = 0  # T2T's buckets in static mode too
    assert pipeline.BatchingScheme.from_hparams(values, static=True) == t2t
    values.static_length_buckets = 1  # T2T's TPU input: one shape
    assert pipeline.BatchingScheme.from_hparams(values, static=True).limits == [48]


def test_dynamic_batches_respect_the_token_budget(reverse_data):
    problem, data_dir = reverse_data
    values = hparams()
    dataset = pipeline.make_dataset(problem, "train", data_dir, values, seed=3)
    for batch in dataset.take(40):
        padded_tokens = max(batch["inputs"].shape[1], batch["targets"].shape[1])
        assert batch["inputs"].shape[0] * padded_tokens <= values.batch_size
        # Padding is 0 and every row ends with one EOS.
        assert np.all(np.sum(batch["targets"].numpy() == 1, axis=1) == 1)


def test_fixed_batch_size_counts_examples(reverse_data):
    problem, data_dir = reverse_data
    values = hparams(use_fixed_batch_size=True, batch_size=5)
    dataset = pipeline.make_dataset(problem, "dev", data_dir, values)
    sizes = [batch["targets"].shape[0] for batch in dataset]
    assert sum(sizes) == 50 and max(sizes) == 5


def test_static_batches_take_only_declared_shapes(reverse_data):
    problem, data_dir = reverse_data
    values = hparams(length_bucket_step=1.5)
    declared = {
        (shape["inputs"][0], shape["inputs"][1], shape["targets"][1])
        for shape in pipeline.static_batch_shapes(problem, values)
    }
    dataset = pipeline.make_dataset(problem, "train", data_dir, values, static_shapes=True, seed=1)
    seen = set()
    for batch in dataset.take(60):
        seen.add((batch["inputs"].shape[0], batch["inputs"].shape[1], batch["targets"].shape[1]))
    assert seen <= declared
    assert len(seen) > 2  # several buckets were really used


def test_long_examples_are_dropped_and_counted(reverse_data):
    problem, data_dir = reverse_data
    counter = pipeline.DropCounter()
    values = hparams(max_target_seq_length=11)  # 10 symbols + EOS
    dataset = pipeline.make_dataset(problem, "dev", data_dir, values, drop_counter=counter)
    kept = sum(batch["targets"].shape[0] for batch in dataset)
    for batch in dataset:
        assert np.all(np.count_nonzero(batch["targets"].numpy(), axis=1) <= 11)
    counts = counter.counts()
    assert counts["max_target_seq_length"] > 0
    # Each pass over dev counts its drops again: two passes were made above.
    assert kept + counts["max_target_seq_length"] // 2 == 50


def _rows(dataset):
    rows = collections.Counter()
    for batch in dataset:
        for row in batch["inputs"].numpy():
            rows[tuple(row[row > 0])] += 1
    return rows


def test_two_workers_read_disjoint_shards(reverse_data):
    problem, data_dir = reverse_data
    per_worker = []
    for worker in range(2):
        context = tf.distribute.InputContext(
            num_input_pipelines=2, input_pipeline_id=worker, num_replicas_in_sync=2
        )
        dataset = pipeline.make_dataset(
            problem, "train", data_dir, hparams(), input_context=context, repeat=False
        )
        per_worker.append(_rows(dataset))
    everything = _rows(pipeline.make_dataset(problem, "train", data_dir, hparams(), repeat=False))
    # Each example is read by exactly one worker: 2 of the 4 shards each.
    assert per_worker[0] + per_worker[1] == everything
    assert sum(per_worker[0].values()) == sum(per_worker[1].values()) == 300
    eight = tf.distribute.InputContext(num_input_pipelines=8, input_pipeline_id=0)
    with pytest.raises(DataError, match="4 train shard"):
        pipeline.make_dataset(problem, "train", data_dir, hparams(), input_context=eight)


def test_eval_order_is_deterministic(reverse_data):
    problem, data_dir = reverse_data

    def epoch():
        dataset = pipeline.make_dataset(problem, "dev", data_dir, hparams())
        return [batch["inputs"].numpy().tolist() for batch in dataset]

    assert epoch() == epoch()


def test_missing_data_names_the_command(tmp_path, reverse_data):
    problem, _ = reverse_data
    with pytest.raises(DataError, match="run t2t-lite-datagen --problem=algorithmic_reverse"):
        pipeline.make_dataset(problem, "train", str(tmp_path), hparams())


def test_pipelines_run_without_the_autotuning_thread(reverse_data):
    # Destroying an iterator waits out that thread's sleep (up to 60 s in TF
    # 2.21); see make_dataset.
    problem, data_dir = reverse_data
    for mode in ("train", "dev"):
        dataset = pipeline.make_dataset(problem, mode, data_dir, hparams(), seed=1)
        assert dataset.options().autotune.enabled is False, mode
        assert dataset.options().threading.max_intra_op_parallelism == 1, mode
