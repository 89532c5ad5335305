import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import Dropout


def test_layer_contract(run_layer_test, rng):
    run_layer_test(
        Dropout,
        {"rate": 0.5, "noise_shape": (None, 1, None), "seed": 3},
        rng.normal(size=(2, 5, 8)).astype("float32"),
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=0,
        expected_trainable_params=0,
        supports_dropout=True,
        run_mixed_precision=False,  # no weights; bfloat16 inputs are tested below
    )


@pytest.mark.parametrize("rate", [0.1, 0.3])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_drops_rate_of_elements_and_scales_the_rest(rate, dtype):
    inputs = tf.ones([401, 999], dtype)  # an odd size: the last word's high half is unused
    outputs = Dropout(rate, seed=7)(inputs, training=True).numpy().astype("float32")
    dropped = float(np.mean(outputs == 0.0))
    # Binomial standard deviation over 400,599 draws is < 0.0008: 6 of them.
    assert abs(dropped - rate) < 0.005
    kept = outputs[outputs != 0.0]
    np.testing.assert_allclose(kept, 1.0 / (1.0 - rate), rtol=1e-2 if dtype == "bfloat16" else 1e-6)


def test_noise_shape_shares_one_decision_along_its_ones():
    outputs = Dropout(0.5, noise_shape=(None, 1, None), seed=1)(
        tf.ones([3, 6, 40]), training=True
    ).numpy()
    np.testing.assert_array_equal(outputs, np.broadcast_to(outputs[:, :1], outputs.shape))
    assert 0 < np.mean(outputs == 0) < 1


def test_each_call_draws_a_new_mask_and_a_seed_repeats_the_first():
    inputs = tf.ones([8, 64])
    layer = Dropout(0.5, seed=5)
    first, second = (layer(inputs, training=True).numpy() for _ in range(2))
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(Dropout(0.5, seed=5)(inputs, training=True).numpy(), first)


def test_inference_and_rate_zero_pass_inputs_through(rng):
    inputs = rng.normal(size=(4, 9)).astype("float32")
    np.testing.assert_array_equal(Dropout(0.4)(inputs).numpy(), inputs)
    np.testing.assert_array_equal(Dropout(0.0)(inputs, training=True).numpy(), inputs)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_gradient_is_the_mask_times_the_scale(rng, jit_compile):
    x = tf.constant(rng.normal(size=(6, 33)).astype("float32"))
    upstream = tf.constant(rng.normal(size=(6, 33)).astype("float32"))
    layer = Dropout(0.25, seed=2)

    @tf.function(jit_compile=jit_compile)
    def outputs_and_gradient(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
            loss = tf.reduce_sum(y * upstream)
        return y, tape.gradient(loss, x)

    y, gradient = outputs_and_gradient(x)
    kept = y.numpy() != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(y.numpy(), np.where(kept, x.numpy() / 0.75, 0.0), rtol=1e-6)
    np.testing.assert_allclose(
        gradient.numpy(), np.where(kept, upstream.numpy() / 0.75, 0.0), rtol=1e-6
    )
