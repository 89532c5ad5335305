"""Sharded TFRecord files: T2T's names, atomic writing, serialization helpers.

Shards are named `{problem}-{split}-{i:05d}-of-{n:05d}` inside `data_dir`.
They are written under temporary names and renamed only when every shard of
the split is complete, so an interrupted datagen never leaves a shard that
looks finished.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import tensorflow as tf

_INCOMPLETE = ".incomplete"


def shard_paths(data_dir: str, problem_name: str, split: str, num_shards: int) -> list[str]:
    return [
        os.path.join(data_dir, f"{problem_name}-{split}-{i:05d}-of-{num_shards:05d}")
        for i in range(num_shards)
    ]


def shard_pattern(data_dir: str, problem_name: str, split: str) -> str:
    return os.path.join(data_dir, f"{problem_name}-{split}-?????-of-?????")


def existing_shards(data_dir: str, problem_name: str, split: str) -> list[str]:
    return sorted(tf.io.gfile.glob(shard_pattern(data_dir, problem_name, split)))


def to_example(features: dict) -> tf.train.Example:
    """A tf.train.Example from a dict of int lists, float lists, bytes or str."""
    feature = {}
    for name, value in features.items():
        if isinstance(value, str):
            value = value.encode("utf-8")
        if isinstance(value, bytes):
            feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
            continue
        values = list(value)
        if all(isinstance(v, int) for v in values):
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        elif all(isinstance(v, float | int) for v in values):
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        else:
            raise ValueError(f"feature {name!r} must hold ints, floats, bytes or str.")
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_shards(examples: Iterable[dict], paths: list[str]) -> int:
    """Writes `examples` round-robin into `paths`; returns how many were written.

    On any error the temporary files are removed and nothing is renamed.
    """
    for path in paths:
        tf.io.gfile.makedirs(os.path.dirname(path) or ".")
    temporary = [path + _INCOMPLETE for path in paths]
    writers = [tf.io.TFRecordWriter(path) for path in temporary]
    count = 0
    try:
        for count, example in enumerate(examples, start=1):
            writers[(count - 1) % len(writers)].write(to_example(example).SerializeToString())
    except BaseException:
        for writer in writers:
            writer.close()
        for path in temporary:
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
        raise
    for writer in writers:
        writer.close()
    for path, final in zip(temporary, paths, strict=True):
        tf.io.gfile.rename(path, final, overwrite=True)
    return count


def read_examples(paths: list[str], spec: dict) -> Iterator[dict]:
    """Parses every record of `paths` with `spec` (eager; for tests and tools)."""
    for record in tf.data.TFRecordDataset(paths):
        yield tf.io.parse_single_example(record, spec)
