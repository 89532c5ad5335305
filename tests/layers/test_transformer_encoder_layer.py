"""TransformerEncoderLayer: padding invariance, T2T's residual structure, config."""

import numpy as np
import pytest

from t2t_lite.layers import TransformerEncoderLayer


@pytest.mark.parametrize(
    "ffn_layer, conv_module_kernel",
    [("dense_relu_dense", 0), ("conv_relu_conv", 0), ("conv_relu_conv", 5)],
)
def test_padding_never_changes_real_positions(rng, ffn_layer, conv_module_kernel):
    layer = TransformerEncoderLayer(
        16, 32, 2, ffn_layer=ffn_layer, conv_first_kernel=3, conv_module_kernel=conv_module_kernel
    )
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


def test_the_convolution_module_runs_between_attention_and_feed_forward(rng):
    layer = TransformerEncoderLayer(
        8, 16, 2, preprocess_sequence="none", postprocess_sequence="a", conv_module_kernel=3
    )
    x = rng.normal(size=(1, 5, 8)).astype("float32")
    out = layer(x).numpy()
    after_attention = x + layer._self_attention(x).numpy()
    after_conv = after_attention + layer._conv_module(after_attention).numpy()
    expected = after_conv + layer._ffn(after_conv).numpy()
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_the_convolution_module_does_not_stream_yet_and_needs_an_odd_kernel():
    with pytest.raises(ValueError, match="does not stream yet"):
        TransformerEncoderLayer(8, 16, 2, causal=True, conv_module_kernel=3)
    with pytest.raises(ValueError, match="kernel_size must be an odd positive int"):
        TransformerEncoderLayer(8, 16, 2, conv_module_kernel=4)


def test_unknown_ffn_layer_is_rejected():
    with pytest.raises(ValueError, match="unknown ffn_layer 'moe'"):
        TransformerEncoderLayer(8, 16, 2, ffn_layer="moe")


@pytest.mark.parametrize(
    "kwargs, num_weights, expected_params",
    [
        (
            dict(
                num_heads=4,
                ffn_layer="conv_relu_conv",
                conv_first_kernel=5,
                attention_dropout=0.1,
                relu_dropout_broadcast_dims=(1,),
                name="enc",
            ),
            12,  # 2 LayerNorms x (gamma, beta), 4 attention kernels, 2 convs x (kernel, bias)
            # norms 2 * (16 + 16), attention 4 * 16 * 16,
            # conv1 5 * 16 * 32 + 32, conv2 32 * 16 + 16: 64 + 1024 + 2592 + 528
            4208,
        ),
        (
            dict(
                num_heads=2,
                ffn_layer="dense_relu_dense",
                norm_type="rms",
                max_relative_position=2,
                relu_dropout=0.5,
                relu_dropout_broadcast_dims=(1,),
            ),
            12,  # 2 RMS scales, 4 attention kernels + 2 relative tables, 2 x (kernel, bias)
            # norms 2 * 16, attention 4 * 16 * 16 + 2 tables * 5 * 8,
            # dense 16 * 32 + 32 + 32 * 16 + 16: 32 + 1104 + 1072
            2208,
        ),
        (
            dict(num_heads=2, ffn_layer="conv_relu_conv", conv_module_kernel=3),
            # 12 as the first, + the module's pre-norm (gamma, beta) and its
            # 8 weights (test_conformer_convolution.py: 912 scalars)
            22,
            # conv1 3 * 16 * 32 + 32: 64 + 1024 + 1568 + 528 + 32 + 912
            4128,
        ),
    ],
    ids=["conv_relu_conv", "dense_relu_dense_relative_rms", "conformer_convolution"],
)
def test_layer_contract(run_layer_test, rng, kwargs, num_weights, expected_params):
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], "float32")
    run_layer_test(
        TransformerEncoderLayer,
        dict(hidden_size=16, filter_size=32, layer_prepostprocess_dropout=0.5, **kwargs),
        dict(x=rng.normal(size=(2, 6, 16)).astype("float32"), nonpadding_mask=mask),
        expected_output_shape=(2, 6, 16),
        expected_num_trainable_weights=num_weights,
        expected_trainable_params=expected_params,
        supports_dropout=True,
    )
