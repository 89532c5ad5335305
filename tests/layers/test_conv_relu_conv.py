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


def numpy_conv1d(x, kernel, bias, left_pad, right_pad):
    x = np.pad(x, [[0, 0], [left_pad, right_pad], [0, 0]])
    width = kernel.shape[0]
    steps = x.shape[1] - width + 1
    return (
        np.stack(
            [np.einsum("bkc,kco->bo", x[:, t : t + width], kernel) for t in range(steps)],
            axis=1,
        )
        + bias
    )


@pytest.mark.parametrize("padding, second_kernel", [("SAME", 1), ("LEFT", 3)])
def test_matches_numpy(padding, second_kernel, x):
    layer = ConvReluConv(
        16, 6, first_kernel_size=3, second_kernel_size=second_kernel, padding=padding
    )
    out = layer(x).numpy()
    assert out.shape == (2, LENGTH, 6)
    first, second = layer._first_conv, layer._second_conv
    first.bias.assign(np.linspace(-0.5, 0.5, 16).astype("float32"))
    pads = (1, 1) if padding == "SAME" else (2, 0)
    hidden = np.maximum(numpy_conv1d(x, first.kernel.numpy(), first.bias.numpy(), *pads), 0.0)
    pads = (0, 0) if second_kernel == 1 else (2, 0)
    expected = numpy_conv1d(hidden, second.kernel.numpy(), second.bias.numpy(), *pads)
    np.testing.assert_allclose(layer(x).numpy(), expected, atol=1e-5)


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


def test_dropout_only_in_training(x):
    layer = ConvReluConv(16, CHANNELS, dropout=0.5)
    inference = layer(x).numpy()
    np.testing.assert_array_equal(layer(x, training=False).numpy(), inference)
    assert not np.allclose(layer(x, training=True).numpy(), inference)


def test_mixed_bfloat16(mixed_bfloat16, x):
    layer = ConvReluConv(16, CHANNELS, padding="LEFT")
    assert layer(x).dtype == tf.bfloat16
    output, cache = layer(x[:, :1], cache=layer.initial_cache(2, CHANNELS))
    assert output.dtype == tf.bfloat16 and cache.dtype == tf.bfloat16


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(padding="VALID"), "unknown padding 'VALID'"),
        (dict(first_kernel_size=0), "first_kernel_size"),
        (dict(dropout=1.0), "dropout"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    args = dict(filter_size=8, output_size=8)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        ConvReluConv(**args)


def test_get_config_round_trip():
    layer = ConvReluConv(
        16,
        8,
        first_kernel_size=5,
        second_kernel_size=1,
        padding="LEFT",
        dropout=0.1,
        dropout_broadcast_dims=(1,),
    )
    clone = ConvReluConv.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


def test_weights_round_trip(tmp_path, x):
    inputs = keras.Input((None, CHANNELS))
    nonpadding = keras.Input((None,))
    outputs = ConvReluConv(16, 4, padding="SAME")(inputs, nonpadding_mask=nonpadding)
    model = keras.Model([inputs, nonpadding], outputs)
    mask = np.ones((2, LENGTH), "float32")
    path = tmp_path / "ffn.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(
        restored.predict([x, mask], verbose=0), model.predict([x, mask], verbose=0), atol=1e-6
    )


def test_first_call_may_be_a_decode_step(x):
    # A decoder restored for decoding first sees one step, shorter than the kernel.
    layer = ConvReluConv(16, CHANNELS, first_kernel_size=3, padding="LEFT")
    step, _ = layer(x[:, :1], cache=layer.initial_cache(2, CHANNELS))
    np.testing.assert_allclose(step.numpy(), layer(x).numpy()[:, :1], atol=1e-5)
