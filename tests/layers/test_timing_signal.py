import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import TimingSignal, add_timing_signal_1d, get_timing_signal_1d


def reference_timing_signal(
    length, channels, min_timescale=1.0, max_timescale=1.0e4, start_index=0
):
    """T2T's get_timing_signal_1d, transcribed to NumPy (float32 like T2T)."""
    position = (np.arange(length) + start_index).astype(np.float32)
    num_timescales = channels // 2
    increment = math.log(max_timescale / min_timescale) / max(num_timescales - 1, 1)
    inv_timescales = min_timescale * np.exp(
        np.arange(num_timescales).astype(np.float32) * -increment
    ).astype(np.float32)
    scaled = position[:, None] * inv_timescales[None, :]
    signal = np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1)
    signal = np.pad(signal, [[0, 0], [0, channels % 2]])
    return signal[None].astype(np.float32)


@pytest.mark.parametrize("channels", [8, 7, 1, 2])
@pytest.mark.parametrize("start_index", [0, 1, 5])
def test_matches_t2t_formula(channels, start_index):
    signal = get_timing_signal_1d(12, channels, start_index=start_index)
    assert signal.dtype == tf.float32
    assert signal.shape == (1, 12, channels)
    expected = reference_timing_signal(12, channels, start_index=start_index)
    np.testing.assert_allclose(signal.numpy(), expected, atol=1e-6)


def test_custom_timescales():
    signal = get_timing_signal_1d(6, 10, min_timescale=2.0, max_timescale=100.0)
    expected = reference_timing_signal(6, 10, 2.0, 100.0)
    np.testing.assert_allclose(signal.numpy(), expected, atol=1e-6)


def test_tensor_length_and_start_index_in_graph():
    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)] * 2)
    def signal(length, start_index):
        return get_timing_signal_1d(length, 6, start_index=start_index)

    np.testing.assert_allclose(
        signal(tf.constant(4), tf.constant(3)).numpy(),
        reference_timing_signal(4, 6, start_index=3),
        atol=1e-6,
    )


def test_add_timing_signal_keeps_shape_and_dtype(rng):
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    out = add_timing_signal_1d(tf.constant(x), start_index=2)
    assert out.shape == x.shape
    np.testing.assert_allclose(
        out.numpy(), x + reference_timing_signal(5, 8, start_index=2), atol=1e-6
    )


def test_layer_adds_signal_from_start_index(rng):
    layer = TimingSignal()
    x = rng.normal(size=(2, 3, 7)).astype("float32")
    out = layer(x, start_index=4)
    assert out.shape == x.shape
    np.testing.assert_allclose(
        out.numpy(), x + reference_timing_signal(3, 7, start_index=4), atol=1e-6
    )
    # Step-by-step decoding sees the same signal as the whole sequence.
    full = layer(x).numpy()
    step = layer(x[:, 2:3], start_index=tf.constant(2)).numpy()
    np.testing.assert_allclose(step, full[:, 2:3], atol=1e-6)


def test_bad_timescales_raise():
    with pytest.raises(ValueError, match="min_timescale"):
        TimingSignal(min_timescale=10.0, max_timescale=1.0)


def test_int64_start_index():
    signal = get_timing_signal_1d(3, 4, start_index=tf.constant(7, tf.int64))
    np.testing.assert_allclose(
        signal.numpy(), reference_timing_signal(3, 4, start_index=7), atol=1e-6
    )


@pytest.mark.parametrize(
    "kwargs",
    [dict(), dict(min_timescale=2.0, max_timescale=50.0, name="timing")],
    ids=["default", "custom_timescales"],
)
def test_layer_contract(run_layer_test, kwargs):
    # Zeros in, the signal (|values| <= 1) out: under mixed_bfloat16 within 1e-2
    # of float32's, which is T2T's (test_layer_adds_signal_from_start_index).
    run_layer_test(
        TimingSignal,
        kwargs,
        np.zeros((2, 4, 8), "float32"),
        expected_output_shape=(2, 4, 8),
        expected_num_trainable_weights=0,
        expected_trainable_params=0,
        mixed_precision_tolerance=1e-2,
    )
