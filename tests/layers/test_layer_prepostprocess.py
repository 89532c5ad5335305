import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import LayerPrePostProcess

EPSILON = 1e-6


def numpy_layer_norm(x, epsilon=EPSILON):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon)


@pytest.fixture
def x(rng):
    return rng.normal(loc=3.0, scale=2.0, size=(2, 5, 8)).astype("float32")


@pytest.fixture
def previous(rng):
    return rng.normal(size=(2, 5, 8)).astype("float32")


@pytest.mark.parametrize("sequence", ["none", ""])
def test_identity_sequences(sequence, x):
    layer = LayerPrePostProcess(sequence, dropout=0.5)
    np.testing.assert_array_equal(layer(x, training=True).numpy(), x)
    assert not layer.weights


def test_a_adds_previous(x, previous):
    out = LayerPrePostProcess("a")(x, previous=previous)
    np.testing.assert_allclose(out.numpy(), x + previous, atol=1e-6)


def test_a_without_previous_raises(x):
    with pytest.raises(ValueError, match="'a'.*previous"):
        LayerPrePostProcess("da")(x)


def test_n_layer_norm(x):
    layer = LayerPrePostProcess("n")
    np.testing.assert_allclose(layer(x).numpy(), numpy_layer_norm(x), atol=1e-5)
    assert sorted(w.name for w in layer.weights) == ["beta", "gamma"]


def test_n_rms_norm(x):
    layer = LayerPrePostProcess("n", norm_type="rms")
    expected = x / np.sqrt((x**2).mean(-1, keepdims=True) + EPSILON)
    np.testing.assert_allclose(layer(x).numpy(), expected, atol=1e-5)
    assert [w.name for w in layer.weights] == ["scale"]


def test_n_with_norm_type_none_is_identity(x):
    np.testing.assert_array_equal(LayerPrePostProcess("n", norm_type="none")(x).numpy(), x)


def test_d_is_dropout_in_training_only(x):
    layer = LayerPrePostProcess("d", dropout=0.5)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    trained = layer(x, training=True).numpy()
    kept = trained != 0
    assert 0 < kept.sum() < x.size
    np.testing.assert_allclose(trained[kept], 2 * x[kept], rtol=1e-6)


def test_d_broadcast_dims_share_the_mask_along_length():
    layer = LayerPrePostProcess("d", dropout=0.5, dropout_broadcast_dims=(1,))
    out = layer(np.ones((3, 6, 16), "float32"), training=True).numpy()
    np.testing.assert_array_equal(out, np.broadcast_to(out[:, :1], out.shape))


def test_da_postprocess(x, previous):
    layer = LayerPrePostProcess("da", dropout=0.5)
    np.testing.assert_allclose(layer(x, previous=previous).numpy(), x + previous)
    trained = layer(x, previous=previous, training=True).numpy()
    dropped = trained - previous
    kept = ~np.isclose(dropped, 0.0, atol=1e-6)
    np.testing.assert_allclose(dropped[kept], 2 * x[kept], rtol=1e-5, atol=1e-5)


def test_dan_applies_steps_in_order(x, previous):
    layer = LayerPrePostProcess("dan", dropout=0.5)
    np.testing.assert_allclose(
        layer(x, previous=previous).numpy(), numpy_layer_norm(x + previous), atol=1e-5
    )


def test_one_norm_per_n(x, previous):
    layer = LayerPrePostProcess("nan")
    layer(x, previous=previous)
    assert len(layer.weights) == 4


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(sequence="dax"), "unknown step.*'x'"),
        (dict(sequence="n", norm_type="batch"), "unknown norm_type 'batch'"),
        (dict(sequence="d", dropout=-0.1), "dropout"),
        (dict(sequence="d", dropout_broadcast_dims=(3,)), "out of range"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LayerPrePostProcess(**kwargs)


@pytest.mark.parametrize("norm_type", ["layer", "rms"])
def test_norm_in_float32_under_mixed_bfloat16(mixed_bfloat16, x, previous, norm_type):
    layer = LayerPrePostProcess("an", norm_type=norm_type)
    out = layer(x, previous=previous)
    assert out.dtype == tf.bfloat16
    assert all(w.dtype == "float32" for w in layer.weights)
    reference = LayerPrePostProcess("an", norm_type=norm_type, dtype="float32")
    expected = reference(x, previous=previous).numpy()
    # bfloat16 has an 8-bit mantissa: a relative error of ~2**-8 per element,
    # plus the rounding of the bfloat16 sum fed to the norm.
    np.testing.assert_allclose(out.numpy().astype("float32"), expected, atol=5e-2)


@pytest.mark.parametrize(
    "kwargs, num_weights, expected_params",
    [
        (dict(sequence="an"), 2, 16),  # one LayerNormalization: gamma 8 + beta 8
        (
            dict(
                sequence="dan",
                dropout=0.5,
                norm_type="rms",
                norm_epsilon=1e-5,
                dropout_broadcast_dims=(1,),
                name="post",
            ),
            1,
            8,  # one RMSNormalization: scale 8
        ),
    ],
    ids=["an_layer_norm", "dan_rms_norm"],
)
def test_layer_contract(run_layer_test, kwargs, num_weights, expected_params, x, previous):
    run_layer_test(
        LayerPrePostProcess,
        kwargs,
        dict(x=x, previous=previous),
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=num_weights,
        expected_trainable_params=expected_params,
        supports_dropout="dropout" in kwargs,
    )
