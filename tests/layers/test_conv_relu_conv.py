import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import ConvReluConv

CHANNELS = 8
LENGTH = 7


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(3).normal(size=(2, LENGTH, CHANNELS)).astype("float32")


@pytest.fixture(scope="module")
def left():
    layer = ConvReluConv(16, CHANNELS, first_kernel_size=3, padding="LEFT")
    layer(np.zeros((1, LENGTH, CHANNELS), "float32"))
    return layer


def t2t_tpu_conv1d(x, kernel, bias, padding):
    """T2T's tpu_conv1d written out in NumPy: dense taps, tap i reading the
    padded input at window offset i, one bias, the sum scaled by k**-0.5
    (with tap 0 at the window's first offset, see test_first_tap_...)."""
    k, length = kernel.shape[0], x.shape[1]
    first = -((k - 1) // 2) if padding == "SAME" else -(k - 1)
    padded = np.pad(x, [[0, 0], [-first, k - 1 + first], [0, 0]])
    total = bias
    for i in range(k):
        total = total + padded[:, i : i + length] @ kernel[i]
    return total * k**-0.5


@pytest.mark.parametrize(
    "padding, first_kernel, second_kernel", [("SAME", 3, 1), ("SAME", 5, 3), ("LEFT", 3, 3)]
)
def test_matches_t2t_formula(padding, first_kernel, second_kernel, x):
    layer = ConvReluConv(
        16, 6, first_kernel_size=first_kernel, second_kernel_size=second_kernel, padding=padding
    )
    layer(x)
    first, second = layer._first_conv, layer._second_conv
    assert tuple(first.kernel.shape) == (first_kernel, CHANNELS, 16)
    rng = np.random.default_rng(0)
    first.bias.assign(rng.normal(size=16).astype("float32"))
    second.bias.assign(rng.normal(size=6).astype("float32"))
    hidden = t2t_tpu_conv1d(x, first.kernel.numpy(), first.bias.numpy(), padding)
    expected = t2t_tpu_conv1d(
        np.maximum(hidden, 0.0), second.kernel.numpy(), second.bias.numpy(), padding
    )
    np.testing.assert_allclose(layer(x).numpy(), expected, atol=1e-5)


def test_first_tap_reads_the_first_offset_of_the_window():
    # Not T2T's quirk (tensor2tensor issue #1764: its tap 0 reads x[t], so
    # x[t-2] is never read), by hand: kernel 3, LEFT, one channel, tap
    # i = i + 1, no bias. Output t = (1 * x[t-2] + 2 * x[t-1] + 3 * x[t]) / sqrt(3).
    layer = ConvReluConv(1, 1, first_kernel_size=3, padding="LEFT")
    x = np.array([[[1.0], [10.0], [100.0]]], "float32")
    layer(x)
    layer._first_conv.kernel.assign(np.array([1.0, 2.0, 3.0], "float32").reshape(3, 1, 1))
    layer._second_conv.kernel.assign(np.ones((1, 1, 1), "float32"))
    expected = np.array([3.0, 32.0, 321.0]) / np.sqrt(3.0)
    np.testing.assert_allclose(layer(x).numpy().ravel(), expected, rtol=1e-6)


def test_kernel_one_is_a_dense_layer(x):
    layer = ConvReluConv(16, 6, first_kernel_size=1, padding="SAME")
    layer(x)
    first, second = layer._first_conv, layer._second_conv
    hidden = np.maximum(x @ first.kernel.numpy()[0] + first.bias.numpy(), 0.0)
    expected = hidden @ second.kernel.numpy()[0] + second.bias.numpy()
    np.testing.assert_allclose(layer(x).numpy(), expected, atol=1e-5)


def test_initializer_counts_fans_per_tap():
    # T2T's taps are separate [in, out] dense kernels: a fan_avg uniform
    # initializer draws from +-sqrt(3 / ((in + out) / 2)) whatever the width.
    layer = ConvReluConv(
        256,
        64,
        first_kernel_size=9,
        padding="LEFT",
        kernel_initializer=keras.initializers.VarianceScaling(1.0, "fan_avg", "uniform", seed=1),
    )
    layer(np.zeros((1, 2, 64), "float32"))
    kernel = layer._first_conv.kernel.numpy()
    limit = np.sqrt(3.0 / ((64 + 256) / 2))
    assert np.abs(kernel).max() <= limit
    assert np.abs(kernel).max() > 0.95 * limit
    # Taps are drawn independently, not copies of one draw.
    assert not np.allclose(kernel[0], kernel[1])


@pytest.mark.parametrize("second_kernel", [1, 3])
def test_same_padding_invariance(second_kernel, x):
    layer = ConvReluConv(
        16, CHANNELS, first_kernel_size=3, second_kernel_size=second_kernel, padding="SAME"
    )
    real = 4
    nonpadding = np.zeros((2, LENGTH), "float32")
    nonpadding[:, :real] = 1.0
    changed = x.copy()
    changed[:, real:] = 50.0
    before = layer(x, nonpadding_mask=nonpadding).numpy()
    after = layer(changed, nonpadding_mask=nonpadding).numpy()
    np.testing.assert_allclose(after[:, :real], before[:, :real], atol=1e-5)
    # Without the mask the padding would leak into the last real position.
    assert not np.allclose(layer(changed).numpy()[:, :real], before[:, :real])


def test_left_padding_is_causal(left, x):
    before = left(x).numpy()
    for t in range(LENGTH - 1):
        changed = x.copy()
        changed[:, t + 1 :] += 5.0
        after = left(changed).numpy()
        np.testing.assert_allclose(after[:, : t + 1], before[:, : t + 1], atol=1e-5)


def test_cached_decoding_equals_full(left, x):
    full = left(x).numpy()
    cache = left.initial_cache(2, CHANNELS)
    assert cache.shape == (2, 2, CHANNELS)
    outputs = []
    for t in range(LENGTH):
        output, cache = left(x[:, t : t + 1], cache=cache)
        assert cache.shape == (2, 2, CHANNELS)
        outputs.append(output.numpy())
    np.testing.assert_allclose(np.concatenate(outputs, axis=1), full, atol=1e-5)
    np.testing.assert_allclose(cache.numpy(), x[:, -2:], atol=1e-6)


def test_cached_step_under_xla_matches_eager(left, x):
    compiled = tf.function(left.__call__, jit_compile=True)
    cache = left.initial_cache(2, CHANNELS)
    eager, eager_cache = left(x[:, :1], cache=cache)
    xla, xla_cache = compiled(x[:, :1], cache=cache)
    np.testing.assert_allclose(xla.numpy(), eager.numpy(), atol=1e-5)
    np.testing.assert_allclose(xla_cache.numpy(), eager_cache.numpy())


def test_kernel_one_cache_is_empty(x):
    layer = ConvReluConv(16, CHANNELS, first_kernel_size=1, padding="LEFT")
    full = layer(x).numpy()
    cache = layer.initial_cache(2, CHANNELS)
    output, cache = layer(x[:, 3:4], cache=cache)
    assert cache.shape == (2, 0, CHANNELS)
    np.testing.assert_allclose(output.numpy(), full[:, 3:4], atol=1e-5)


@pytest.mark.parametrize("kwargs", [dict(padding="SAME"), dict(second_kernel_size=3)])
def test_unsupported_cache_raises(kwargs, x):
    args = dict(filter_size=16, output_size=CHANNELS, padding="LEFT")
    args.update(kwargs)
    layer = ConvReluConv(**args)
    with pytest.raises(ValueError, match="padding='LEFT' and second_kernel_size=1"):
        layer(x[:, :1], cache=layer.initial_cache(2, CHANNELS))


def test_cached_step_under_mixed_bfloat16(mixed_bfloat16, x):
    layer = ConvReluConv(16, CHANNELS, padding="LEFT")
    output, cache = layer(x[:, :1], cache=layer.initial_cache(2, CHANNELS))
    assert output.dtype == tf.bfloat16 and cache.dtype == tf.bfloat16


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(padding="VALID"), "unknown padding 'VALID'"),
        (dict(first_kernel_size=4), "padding='SAME' needs odd kernel sizes"),
        (dict(first_kernel_size=0), "first_kernel_size"),
        (dict(dropout=1.0), "dropout"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    args = dict(filter_size=8, output_size=8)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        ConvReluConv(**args)


def test_first_call_may_be_a_decode_step(x):
    # A decoder restored for decoding first sees one step, shorter than the kernel.
    layer = ConvReluConv(16, CHANNELS, first_kernel_size=3, padding="LEFT")
    step, _ = layer(x[:, :1], cache=layer.initial_cache(2, CHANNELS))
    np.testing.assert_allclose(step.numpy(), layer(x).numpy()[:, :1], atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, expected_params",
    [
        # conv1: 3 taps of [8, 16] + bias 16; conv2: 1 tap of [16, 4] + bias 4.
        (dict(output_size=4, padding="SAME"), 468),  # 384 + 16 + 64 + 4
        # conv1: 5 taps of [8, 16] + bias 16; conv2: 1 tap of [16, 8] + bias 8.
        (
            dict(output_size=8, first_kernel_size=5, padding="LEFT", dropout_broadcast_dims=(1,)),
            792,  # 640 + 16 + 128 + 8
        ),
    ],
    ids=["same", "left"],
)
def test_layer_contract(run_layer_test, kwargs, expected_params, x):
    nonpadding = np.ones((2, LENGTH), "float32")
    nonpadding[1, 4:] = 0.0
    run_layer_test(
        ConvReluConv,
        dict(filter_size=16, second_kernel_size=1, dropout=0.5, **kwargs),
        dict(x=x, nonpadding_mask=nonpadding),
        expected_output_shape=(2, LENGTH, kwargs["output_size"]),
        expected_num_trainable_weights=4,  # kernel and bias of each conv
        expected_trainable_params=expected_params,
        supports_dropout=True,
    )
