import numpy as np
import pytest

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


def test_layer_contract(run_layer_test, x):
    run_layer_test(
        DenseReluDense,
        dict(
            filter_size=32,
            output_size=12,
            dropout=0.5,
            dropout_broadcast_dims=(1,),
            kernel_initializer="he_normal",
        ),
        x,
        expected_output_shape=(2, 5, 12),
        expected_num_trainable_weights=4,  # kernel and bias of each Dense
        expected_trainable_params=684,  # 8 * 32 + 32 (filter) + 32 * 12 + 12 (output)
        supports_dropout=True,
    )
