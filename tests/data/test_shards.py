"""Shards: T2T's names, round-robin, atomic (nothing left on failure)."""

import os

import pytest
import tensorflow as tf

from t2t_lite.data import shards


def test_names_and_round_trip(tmp_path):
    paths = shards.shard_paths(str(tmp_path), "my_problem", "train", 3)
    assert [os.path.basename(p) for p in paths] == [
        "my_problem-train-00000-of-00003",
        "my_problem-train-00001-of-00003",
        "my_problem-train-00002-of-00003",
    ]
    examples = [{"targets": [i, 1], "text": f"t{i}", "score": [0.5]} for i in range(7)]
    assert shards.write_shards(iter(examples), paths) == 7
    assert shards.existing_shards(str(tmp_path), "my_problem", "train") == paths
    spec = {
        "targets": tf.io.VarLenFeature(tf.int64),
        "text": tf.io.FixedLenFeature([], tf.string),
        "score": tf.io.FixedLenFeature([1], tf.float32),
    }
    first_shard = list(shards.read_examples(paths[:1], spec))
    assert [int(tf.sparse.to_dense(e["targets"])[0]) for e in first_shard] == [0, 3, 6]
    assert first_shard[1]["text"].numpy() == b"t3"


def test_failure_leaves_nothing(tmp_path):
    paths = shards.shard_paths(str(tmp_path), "broken", "train", 2)

    def examples():
        yield {"targets": [1]}
        raise RuntimeError("reader crashed")

    with pytest.raises(RuntimeError):
        shards.write_shards(examples(), paths)
    assert os.listdir(tmp_path) == []
