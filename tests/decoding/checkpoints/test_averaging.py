"""Checkpoint averaging: identical checkpoints reproduce, different ones average."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.checkpoints.averaging import average_checkpoints, last_checkpoints


def make_state(tmp_path):
    kernel = keras.Variable(np.ones((2, 3), "float32"))
    bias = keras.Variable(np.zeros((3,), "float32"))
    optimizer = keras.optimizers.Adam()
    optimizer.build([kernel, bias])
    module = tf.Module()
    module.kernel, module.bias = kernel, bias
    checkpoint = tf.train.Checkpoint(model=module, optimizer=optimizer, step=optimizer.iterations)
    manager = tf.train.CheckpointManager(checkpoint, str(tmp_path / "run"), max_to_keep=10)
    return kernel, bias, optimizer, module, manager


def test_identical_checkpoints_reproduce_them(tmp_path):
    kernel, bias, _, module, manager = make_state(tmp_path)
    kernel.assign(np.arange(6, dtype="float32").reshape(2, 3))
    paths = [manager.save(checkpoint_number=n) for n in (1, 2, 3)]
    averaged = average_checkpoints(paths, str(tmp_path / "avg" / "ckpt-avg"))
    original = tf.train.load_checkpoint(paths[-1])
    result = tf.train.load_checkpoint(averaged)
    for name, _ in original.get_variable_to_shape_map().items():
        if name != "_CHECKPOINTABLE_OBJECT_GRAPH":
            np.testing.assert_array_equal(result.get_tensor(name), original.get_tensor(name))


def test_different_checkpoints_give_the_mean_and_restore(tmp_path):
    kernel, bias, optimizer, module, manager = make_state(tmp_path)
    values = [np.full((2, 3), v, "float32") for v in (1.0, 2.0, 6.0)]
    for step, value in enumerate(values, start=1):
        kernel.assign(value)
        bias.assign(value[0] * 10)
        optimizer.iterations.assign(step * 100)
        manager.save(checkpoint_number=step)
    paths = last_checkpoints(str(tmp_path / "run"), 3)
    assert [p.rsplit("-", 1)[1] for p in paths] == ["1", "2", "3"]
    averaged = average_checkpoints(paths, str(tmp_path / "avg" / "ckpt-avg"))
    kernel.assign(np.zeros((2, 3)))
    bias.assign(np.zeros(3))
    latest = tf.train.latest_checkpoint(str(tmp_path / "avg"))
    assert latest == averaged
    tf.train.Checkpoint(model=module).restore(latest).expect_partial()
    np.testing.assert_allclose(kernel.numpy(), np.full((2, 3), 3.0))
    np.testing.assert_allclose(bias.numpy(), np.full(3, 30.0))
    step = tf.train.load_checkpoint(averaged).get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE")
    assert step == 300  # integers come from the newest checkpoint


def test_a_relative_directory_gives_existing_paths(tmp_path, monkeypatch):
    *_, manager = make_state(tmp_path)
    manager.save(checkpoint_number=1)
    monkeypatch.chdir(tmp_path)
    (path,) = last_checkpoints("run", 1)
    assert tf.io.gfile.exists(path + ".index")


def test_too_many_or_none(tmp_path):
    *_, manager = make_state(tmp_path)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        last_checkpoints(str(tmp_path / "run"), 1)
    manager.save(checkpoint_number=1)
    with pytest.raises(ValueError, match="asked to average 2 checkpoints but .* keeps 1"):
        last_checkpoints(str(tmp_path / "run"), 2)
