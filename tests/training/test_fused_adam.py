"""FusedAdam: Keras' Adam's numbers, state and checkpoints, from TF's fused kernel."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.training.fused_adam import FusedAdam

SETTINGS = dict(learning_rate=0.01, beta_1=0.9, beta_2=0.997, epsilon=1e-9)
# The kernel forms 1 - beta_2 in float32 (0.0029999614), Keras in Python
# floats (0.003): the second moments differ in the 5th digit.
RTOL = 2e-5


def assert_close(got, want):
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-7)


def gradients(steps=4):
    """Per step: a dense gradient with a zero entry, and an embedding's
    IndexedSlices (rows 0 and 2 twice, row 1 never)."""
    rng = np.random.default_rng(0)
    for _ in range(steps):
        dense = rng.normal(size=(3, 4)).astype("float32")
        dense[0, 0] = 0.0
        rows = rng.normal(size=(3, 2)).astype("float32")
        yield (
            dense,
            tf.IndexedSlices(tf.constant(rows), tf.constant([0, 2, 0]), tf.constant([3, 2])),
        )


def train(optimizer_class, wrap=lambda f: f, densify=False, **kwargs):
    rng = np.random.default_rng(1)
    weights = [
        keras.Variable(rng.normal(size=shape).astype("float32")) for shape in ((3, 4), (3, 2))
    ]
    optimizer = optimizer_class(**{**SETTINGS, **kwargs})
    optimizer.build(weights)
    apply = wrap(lambda grads: optimizer.apply(grads, weights))
    for grads in gradients():
        apply([tf.convert_to_tensor(g) for g in grads] if densify else list(grads))
    return [w.numpy() for w in weights], [v.numpy() for v in optimizer.variables]


@pytest.mark.parametrize(
    "wrap",
    [lambda f: f, tf.function, lambda f: tf.function(f, jit_compile=True)],
    ids=["eager", "tf.function", "xla"],
)
def test_matches_keras_adam(wrap):
    """Keras' Adam is given the IndexedSlices summed into a dense gradient: it
    squares each slice, so a row gathered twice would get g1**2 + g2**2 in its
    second moment rather than Adam's (g1 + g2)**2, which the kernel computes."""
    fused, fused_state = train(FusedAdam, wrap)
    expected, expected_state = train(keras.optimizers.Adam, wrap, densify=True)
    assert_close(fused + fused_state, expected + expected_state)
    assert not np.allclose(fused[0], train(FusedAdam, wrap, beta_1=0.5)[0][0])


@pytest.mark.parametrize("kwargs", [{"gradient_accumulation_steps": 2}, {"amsgrad": True}])
def test_accumulation_and_amsgrad_match_keras_adam(kwargs):
    fused, fused_state = train(FusedAdam, tf.function, **kwargs)
    expected, expected_state = train(keras.optimizers.Adam, tf.function, densify=True, **kwargs)
    assert_close(fused + fused_state, expected + expected_state)


def test_under_a_strategy_and_checkpoints_are_keras_adams(tmp_path):
    """Built and applied in a MirroredStrategy (the trainer's way); its
    checkpoint restores into Keras' Adam, which then takes the same step."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        weight = keras.Variable(np.ones((3, 4), np.float32), name="kernel")
        fused = FusedAdam(**SETTINGS)
        fused.build([weight])
    assert all(isinstance(v.value, tf.distribute.DistributedValues) for v in fused.variables)
    first, second = (dense for dense, _ in gradients(2))
    strategy.run(tf.function(lambda: fused.apply([tf.constant(first)], [weight])))
    path = tf.train.Checkpoint(weight=weight, optimizer=fused).save(str(tmp_path / "ckpt"))

    restored_weight = keras.Variable(np.zeros((3, 4), np.float32), name="kernel")
    plain = keras.optimizers.Adam(**SETTINGS)
    plain.build([restored_weight])
    tf.train.Checkpoint(weight=restored_weight, optimizer=plain).restore(path).assert_consumed()
    strategy.run(tf.function(lambda: fused.apply([tf.constant(second)], [weight])))
    plain.apply([tf.constant(second)], [restored_weight])
    np.testing.assert_allclose(restored_weight.numpy(), weight.numpy(), rtol=RTOL)
    assert not np.allclose(weight.numpy(), 1.0)


def test_config_round_trips():
    optimizer = FusedAdam(**SETTINGS)
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(optimizer))
    assert type(clone) is FusedAdam
    assert clone.get_config() == optimizer.get_config()
