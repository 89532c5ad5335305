import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import LayerNorm


def test_layer_contract(run_layer_test, rng):
    run_layer_test(
        LayerNorm,
        {"epsilon": 1e-5, "gamma_initializer": "random_normal", "beta_initializer": "ones"},
        rng.normal(size=(2, 5, 8)).astype("float32"),
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=2,  # gamma, beta
        expected_trainable_params=16,  # 8 + 8
    )


@pytest.mark.parametrize("shape", [(3, 7, 16), (2, 4, 5, 32)])
def test_values_and_gradients_equal_keras_layer_normalization(rng, shape):
    # Offset and scaled, so the variance is not ~1 and the mean is large.
    x = tf.constant(rng.normal(loc=3.0, scale=2.5, size=shape).astype("float32"))
    upstream = tf.constant(rng.normal(size=shape).astype("float32"))
    ours = LayerNorm(epsilon=1e-6, gamma_initializer="random_normal", beta_initializer="ones")
    theirs = keras.layers.LayerNormalization(epsilon=1e-6)
    ours.build(shape)
    theirs.build(shape)
    theirs.set_weights(ours.get_weights())

    def value_and_grads(layer):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
            loss = tf.reduce_sum(y * upstream)
        return [y, *tape.gradient(loss, [x, *layer.trainable_variables])]

    for got, want in zip(value_and_grads(ours), value_and_grads(theirs), strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)


def test_gradient_of_a_constant_row_is_finite():
    x = tf.ones([2, 8]) * 5.0
    layer = LayerNorm(epsilon=1e-6)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(layer(x) * tf.range(8, dtype=tf.float32))
    assert np.isfinite(tape.gradient(loss, x).numpy()).all()


def test_other_axes_fall_back_to_keras(rng):
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    ours, theirs = LayerNorm(axis=1), keras.layers.LayerNormalization(axis=1)
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), atol=1e-6)
