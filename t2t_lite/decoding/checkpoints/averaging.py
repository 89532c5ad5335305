"""Averaging the last N checkpoints of a run (T2T's avg_checkpoints).

Works on the checkpoint files directly: every floating-point tensor is
averaged, everything else (the step, integer counters, the object graph
that lets `tf.train.Checkpoint` restore by object) is copied from the
newest checkpoint. The result restores wherever the originals do.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

_OBJECT_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"


def last_checkpoints(checkpoint_dir: str, count: int) -> list[str]:
    """The newest `count` checkpoint prefixes of `checkpoint_dir`, oldest first."""
    state = tf.train.get_checkpoint_state(checkpoint_dir)
    if state is None or not state.all_model_checkpoint_paths:
        raise FileNotFoundError(f"{checkpoint_dir} holds no checkpoint to average.")
    paths = list(state.all_model_checkpoint_paths)
    if count > len(paths):
        raise ValueError(
            f"asked to average {count} checkpoints but {checkpoint_dir} keeps {len(paths)}."
        )
    # get_checkpoint_state already joins a relative entry with `checkpoint_dir`.
    return paths[-count:]


def average_checkpoints(paths: list[str], output_prefix: str) -> str:
    """Writes the average of `paths` to `output_prefix`; returns the written prefix.

    Raises:
        ValueError: the checkpoints do not hold the same tensors.
    """
    readers = [tf.train.load_checkpoint(path) for path in paths]
    shapes = readers[-1].get_variable_to_shape_map()
    dtypes = readers[-1].get_variable_to_dtype_map()
    for path, reader in zip(paths, readers, strict=True):
        if reader.get_variable_to_shape_map() != shapes:
            raise ValueError(f"{path} holds different tensors than {paths[-1]}: cannot average.")
    names, tensors = [], []
    for name in sorted(shapes):
        dtype = dtypes[name]
        if dtype.is_floating and name != _OBJECT_GRAPH:
            total = np.zeros(shapes[name], np.float64)
            for reader in readers:
                total += reader.get_tensor(name)
            value = tf.constant((total / len(readers)).astype(dtype.as_numpy_dtype))
        else:
            value = tf.constant(readers[-1].get_tensor(name), dtype=dtype)
        names.append(name)
        tensors.append(value)
    directory = os.path.dirname(output_prefix)
    tf.io.gfile.makedirs(directory)
    temporary = output_prefix + ".tmp"
    tf.raw_ops.SaveV2(
        prefix=temporary,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=tensors,
    )
    for suffix in (".index", ".data-00000-of-00001"):
        tf.io.gfile.rename(temporary + suffix, output_prefix + suffix, overwrite=True)
    # The state file lets tf.train.latest_checkpoint(directory) find it.
    name = os.path.basename(output_prefix)
    state = f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n'
    with tf.io.gfile.GFile(os.path.join(directory, "checkpoint.tmp"), "w") as handle:
        handle.write(state)
    tf.io.gfile.rename(
        os.path.join(directory, "checkpoint.tmp"), os.path.join(directory, "checkpoint"), True
    )
    return output_prefix
