"""TransformerEncoderLayer: padding invariance, T2T's residual structure, config."""

import keras
import numpy as np
import pytest

from t2t_lite.layers import TransformerEncoderLayer


@pytest.mark.parametrize("ffn_layer", ["dense_relu_dense", "conv_relu_conv"])
def test_padding_never_changes_real_positions(rng, ffn_layer):
    layer = TransformerEncoderLayer(16, 32, 2, ffn_layer=ffn_layer, conv_first_kernel=3)
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], "float32")
    changed = x.copy()
    changed[0, 4:] = 50.0
    out, out_changed = layer(x, mask).numpy(), layer(changed, mask).numpy()
    np.testing.assert_allclose(out_changed[0, :4], out[0, :4], atol=1e-5)
    np.testing.assert_allclose(out_changed[1], out[1], atol=1e-6)


def test_is_a_pre_norm_residual_block(rng):
    # With empty sequences there is no norm and no residual: just ffn(attention(x)).
    layer = TransformerEncoderLayer(
        8, 16, 2, preprocess_sequence="none", postprocess_sequence="none"
    )
    x = rng.normal(size=(1, 3, 8)).astype("float32")
    out = layer(x).numpy()
    attended = layer._self_attention(x)
    np.testing.assert_allclose(out, layer._ffn(attended).numpy(), atol=1e-5)
    # With "a" after each sublayer, the block adds its input back.
    residual = TransformerEncoderLayer(
        8, 16, 2, preprocess_sequence="none", postprocess_sequence="a"
    )
    out = residual(x).numpy()
    after_attention = x + residual._self_attention(x).numpy()
    expected = after_attention + residual._ffn(after_attention).numpy()
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_unknown_ffn_layer_is_rejected():
    with pytest.raises(ValueError, match="unknown ffn_layer 'moe'"):
        TransformerEncoderLayer(8, 16, 2, ffn_layer="moe")


def test_config_round_trip_and_weights(rng, tmp_path):
    layer = TransformerEncoderLayer(
        16,
        32,
        4,
        ffn_layer="conv_relu_conv",
        conv_first_kernel=5,
        attention_dropout=0.1,
        relu_dropout_broadcast_dims=(1,),
        name="enc",
    )
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    inputs = keras.Input((5, 16))
    model = keras.Model(inputs, layer(inputs))
    path = str(tmp_path / "encoder.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(restored(x), model(x), atol=1e-6)
    clone = TransformerEncoderLayer.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
