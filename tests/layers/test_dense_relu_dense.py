import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import DenseReluDense


@pytest.fixture
def x(rng):
    return rng.normal(size=(2, 5, 8)).astype("float32")


def test_matches_numpy(x):
    layer = DenseReluDense(filter_size=32, output_size=12)
    out = layer(x).numpy()
    assert out.shape == (2, 5, 12)
    first, second = layer._filter_dense, layer._output_dense
    # Non-zero biases, so that their use is checked too.
    first.bias.assign(np.linspace(-1, 1, 32).astype("float32"))
    second.bias.assign(np.linspace(-1, 1, 12).astype("float32"))
    hidden = np.maximum(x @ first.kernel.numpy() + first.bias.numpy(), 0.0)
    expected = hidden @ second.kernel.numpy() + second.bias.numpy()
    np.testing.assert_allclose(layer(x).numpy(), expected, atol=1e-5)


def test_dropout_only_in_training(x):
    layer = DenseReluDense(32, 8, dropout=0.5)
    inference = layer(x).numpy()
    np.testing.assert_array_equal(layer(x, training=False).numpy(), inference)
    assert not np.allclose(layer(x, training=True).numpy(), inference)


def test_mixed_bfloat16(mixed_bfloat16, x):
    layer = DenseReluDense(32, 8)
    assert layer(x).dtype == tf.bfloat16
    assert all(w.dtype == "float32" for w in layer.weights)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(filter_size=0), "filter_size"),
        (dict(output_size=2.5), "output_size"),
        (dict(dropout=1.5), "dropout"),
        (dict(dropout_broadcast_dims=("1",)), "integers"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    args = dict(filter_size=8, output_size=8)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        DenseReluDense(**args)


def test_get_config_round_trip():
    layer = DenseReluDense(
        32, 8, dropout=0.1, dropout_broadcast_dims=(1,), kernel_initializer="zeros"
    )
    clone = DenseReluDense.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


def test_weights_round_trip(tmp_path, x):
    model = keras.Sequential([keras.Input((None, 8)), DenseReluDense(16, 4)])
    path = tmp_path / "ffn.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(
        restored.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6
    )
