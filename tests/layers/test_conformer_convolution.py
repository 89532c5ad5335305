"""ConformerConvolution: the paper's module by hand, its window, padding, config."""

import numpy as np
import pytest

from t2t_lite.layers import ConformerConvolution

CHANNELS = 8
LENGTH = 9


def by_hand(layer, x):
    """The module written out in NumPy from the layer's weights."""
    w_in, b_in = (v.numpy() for v in layer._pointwise_in.weights)
    h = x @ w_in + b_in
    a, b = h[..., :CHANNELS], h[..., CHANNELS:]
    h = a / (1.0 + np.exp(-b))  # GLU
    k = layer.kernel_size
    padded = np.pad(h, [[0, 0], [k // 2, k // 2], [0, 0]])
    kernel = layer.depthwise_kernel.numpy()[:, :, 0]  # [k, channels]
    h = sum(padded[:, i : i + x.shape[1]] * kernel[i] for i in range(k))
    h = h + layer.depthwise_bias.numpy()
    gamma, beta = (v.numpy() for v in layer._norm.weights)
    mean = h.mean(-1, keepdims=True)
    var = ((h - mean) ** 2).mean(-1, keepdims=True)
    h = (h - mean) / np.sqrt(var + layer.norm_epsilon) * gamma + beta
    h = h / (1.0 + np.exp(-h))  # swish
    w_out, b_out = (v.numpy() for v in layer._pointwise_out.weights)
    return h @ w_out + b_out


def test_matches_the_paper_written_out(rng):
    layer = ConformerConvolution(kernel_size=5)
    x = rng.normal(size=(2, LENGTH, CHANNELS)).astype("float32")
    layer(x)
    # Every weight random (biases, gain and shift included), so none can be skipped.
    layer.set_weights([rng.normal(size=w.shape).astype("float32") for w in layer.get_weights()])
    np.testing.assert_allclose(layer(x).numpy(), by_hand(layer, x), atol=1e-5)


def test_output_reads_only_its_window(rng):
    # Kernel 5: output t reads inputs t-2 .. t+2 and nothing further.
    layer = ConformerConvolution(kernel_size=5)
    x = rng.normal(size=(1, LENGTH, CHANNELS)).astype("float32")
    changed = x.copy()
    changed[0, 6] += 10.0
    moved = np.abs(layer(changed).numpy() - layer(x).numpy()).max(axis=-1)[0]
    assert np.all(moved[4:9] > 1e-4), moved
    np.testing.assert_array_equal(moved[:4], 0.0)


def test_padding_never_reaches_real_positions(rng):
    layer = ConformerConvolution(kernel_size=7)
    x = rng.normal(size=(2, LENGTH, CHANNELS)).astype("float32")
    mask = np.ones((2, LENGTH), "float32")
    mask[0, 5:] = 0.0
    changed = x.copy()
    changed[0, 5:] = 50.0
    out, out_changed = layer(x, mask).numpy(), layer(changed, mask).numpy()
    np.testing.assert_allclose(out_changed[0, :5], out[0, :5], atol=1e-5)
    np.testing.assert_allclose(out_changed[1], out[1], atol=1e-6)
    # Without the mask the padding's values do reach them: the mask matters.
    assert not np.allclose(layer(changed).numpy()[0, :5], layer(x).numpy()[0, :5], atol=1e-3)


@pytest.mark.parametrize("kernel_size", [4, 0, -3, True, 2.0])
def test_a_kernel_that_is_not_odd_and_positive_is_refused(kernel_size):
    with pytest.raises(ValueError, match="kernel_size must be an odd positive int"):
        ConformerConvolution(kernel_size=kernel_size)


def test_layer_contract(run_layer_test, rng):
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], "float32")
    run_layer_test(
        ConformerConvolution,
        dict(kernel_size=3, norm_epsilon=1e-5, name="conv_module"),
        dict(x=rng.normal(size=(2, 6, 16)).astype("float32"), nonpadding_mask=mask),
        expected_output_shape=(2, 6, 16),
        # pointwise_in (kernel, bias), depthwise (kernel, bias), norm (gamma,
        # beta), pointwise_out (kernel, bias): 16*32+32 + 3*16+16 + 2*16 + 16*16+16
        expected_num_trainable_weights=8,
        expected_trainable_params=912,
    )


def test_converts_to_a_builtins_only_tflite_that_gives_the_same_outputs(rng):
    """The exports' `.tflite`s allow TFLite builtins only (`tflite_export.convert`):
    the module is a dense, a depthwise convolution, a norm and a dense."""
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    from t2t_lite.serving.tflite_export import convert

    layer = ConformerConvolution(kernel_size=5)
    x = rng.normal(size=(1, LENGTH, CHANNELS)).astype("float32")
    mask = np.ones((1, LENGTH), "float32")
    mask[0, 7:] = 0.0
    expected = layer(x, mask).numpy()
    function = tf.function(
        lambda x, mask: layer(x, mask),
        input_signature=[
            tf.TensorSpec([1, LENGTH, CHANNELS], tf.float32, name="x"),
            tf.TensorSpec([1, LENGTH], tf.float32, name="mask"),
        ],
    )
    interpreter = Interpreter(model_content=convert(function))
    interpreter.allocate_tensors()
    inputs = {d["name"]: d["index"] for d in interpreter.get_input_details()}
    interpreter.set_tensor(inputs["x"], x)
    interpreter.set_tensor(inputs["mask"], mask)
    interpreter.invoke()
    output = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    np.testing.assert_allclose(output, expected, atol=1e-5)
