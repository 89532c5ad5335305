"""TransformerDecoderLayer: causality, cached decoding equals full, config."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import TransformerDecoderLayer


@pytest.mark.parametrize("grow", [False, True], ids=["fixed", "growing"])
@pytest.mark.parametrize("ffn_layer", ["dense_relu_dense", "conv_relu_conv"])
@pytest.mark.parametrize("has_encoder_attention", [True, False])
def test_cached_steps_equal_full_and_future_is_unseen(rng, ffn_layer, has_encoder_attention, grow):
    layer = TransformerDecoderLayer(
        16, 32, 2, ffn_layer=ffn_layer, has_encoder_attention=has_encoder_attention
    )
    length = 5
    x = rng.normal(size=(2, length, 16)).astype("float32")
    memory = rng.normal(size=(2, 4, 16)).astype("float32") if has_encoder_attention else None
    memory_mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], "float32") if memory is not None else None
    full = layer(x, memory, memory_mask).numpy()

    cache = layer.initial_cache(2, None if grow else length, memory)
    steps = []
    for t in range(length):
        # A fixed-length cache takes the caller's mask; without one (and
        # always when growing) the layer masks the positions after t.
        mask = None if grow or t % 2 else (np.arange(length) <= t)[None, None]
        out, cache = layer(
            x[:, t : t + 1],
            memory_mask=memory_mask,
            self_attention_mask=mask,
            cache=cache,
            cache_update_index=t,
        )
        steps.append(out.numpy())
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-5)

    for t in range(length - 1):
        future = x.copy()
        future[:, t + 1 :] = rng.normal(size=future[:, t + 1 :].shape)
        changed = layer(future, memory, memory_mask).numpy()
        np.testing.assert_allclose(changed[:, : t + 1], full[:, : t + 1], atol=1e-5)


def test_cached_step_compiles_under_xla(rng):
    layer = TransformerDecoderLayer(16, 32, 2, ffn_layer="conv_relu_conv")
    x = rng.normal(size=(2, 1, 16)).astype("float32")
    memory = rng.normal(size=(2, 3, 16)).astype("float32")
    layer(x, memory)
    cache = layer.initial_cache(2, 4, memory)

    def step(x, cache):
        return layer(
            x,
            self_attention_mask=np.array([[[True, False, False, False]]]),
            cache=cache,
            cache_update_index=tf.constant(0),
        )

    eager, _ = step(x, cache)
    compiled, _ = tf.function(step, jit_compile=True)(x, cache)
    np.testing.assert_allclose(compiled, eager, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, num_weights, expected_params",
    [
        (
            dict(
                num_heads=4,
                ffn_layer="conv_relu_conv",
                has_encoder_attention=False,
                layer_prepostprocess_dropout=0.5,
                name="dec",
            ),
            12,  # 2 LayerNorms x (gamma, beta), 4 attention kernels, 2 convs x (kernel, bias)
            # norms 2 * (16 + 16), attention 4 * 16 * 16,
            # conv1 3 * 16 * 32 + 32, conv2 32 * 16 + 16: 64 + 1024 + 1568 + 528
            3184,
        ),
        (
            dict(num_heads=2, key_channels=8, value_channels=8, attention_dropout=0.5),
            18,  # 3 LayerNorms x 2, 2 attentions x 4 kernels, 2 Dense x (kernel, bias)
            # norms 3 * (16 + 16), each attention 3 * 16 * 8 + 8 * 16,
            # dense 16 * 32 + 32 + 32 * 16 + 16: 96 + 2 * 512 + 1072
            2192,
        ),
    ],
    ids=["decoder_only_conv_relu_conv", "encoder_decoder_dense_relu_dense"],
)
def test_layer_contract(run_layer_test, rng, kwargs, num_weights, expected_params):
    inputs = dict(x=rng.normal(size=(2, 5, 16)).astype("float32"))
    if kwargs.get("has_encoder_attention", True):
        inputs["memory"] = rng.normal(size=(2, 4, 16)).astype("float32")
        inputs["memory_mask"] = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], "float32")
    run_layer_test(
        TransformerDecoderLayer,
        dict(hidden_size=16, filter_size=32, **kwargs),
        inputs,
        expected_output_shape=(2, 5, 16),
        expected_num_trainable_weights=num_weights,
        expected_trainable_params=expected_params,
        supports_dropout=True,
    )
