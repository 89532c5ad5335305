"""MultiHeadAttention with `max_relative_position`: T2T's dot_product_relative."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import MultiHeadAttention

HIDDEN = 16
HEADS = 2
DEPTH = HIDDEN // HEADS
LENGTH = 7
MAX_DISTANCE = 2  # < LENGTH - 1, so clipping is exercised


@pytest.fixture(scope="module")
def relative_attention():
    layer = MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN, max_relative_position=MAX_DISTANCE)
    layer(np.zeros((1, LENGTH, HIDDEN), "float32"))
    # Non-zero tables, so that a missing relative term cannot go unnoticed.
    rng = np.random.default_rng(1)
    for table in (layer.relative_key_embeddings, layer.relative_value_embeddings):
        table.assign(rng.normal(size=table.shape).astype("float32"))
    return layer


@pytest.fixture(scope="module")
def inputs():
    return np.random.default_rng(0).normal(size=(2, LENGTH, HIDDEN)).astype("float32")


def causal_mask(length):
    return np.tril(np.ones((length, length), bool))[None]


def reference(layer, inputs, mask):
    """Shaw et al.'s equations, one (query, key) pair at a time."""
    kernels = [
        d.kernel.numpy()
        for d in (layer._query_dense, layer._key_dense, layer._value_dense, layer._output_dense)
    ]
    table_k = layer.relative_key_embeddings.numpy()
    table_v = layer.relative_value_embeddings.numpy()
    batch, length, _ = inputs.shape
    q, k, v = ((inputs @ kernel).reshape(batch, length, HEADS, DEPTH) for kernel in kernels[:3])
    q = q * DEPTH**-0.5
    attended = np.zeros((batch, length, HEADS, DEPTH))
    for b in range(batch):
        for h in range(HEADS):
            for i in range(length):
                rows = [
                    np.clip(j - i, -MAX_DISTANCE, MAX_DISTANCE) + MAX_DISTANCE
                    for j in range(length)
                ]
                logits = np.array(
                    [q[b, i, h] @ (k[b, j, h] + table_k[rows[j]]) for j in range(length)]
                )
                logits = np.where(mask[0, i], logits, -1e9)
                weights = np.exp(logits - logits.max())
                weights /= weights.sum()
                attended[b, i, h] = sum(
                    weights[j] * (v[b, j, h] + table_v[rows[j]]) for j in range(length)
                )
    return attended.reshape(batch, length, HIDDEN) @ kernels[3]


def test_matches_shaw_reference(relative_attention, inputs):
    mask = causal_mask(LENGTH)
    actual = relative_attention(inputs, attention_mask=mask).numpy()
    np.testing.assert_allclose(actual, reference(relative_attention, inputs, mask), atol=1e-5)


def test_relative_tables_change_the_output(relative_attention, inputs):
    plain = MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN)
    plain(inputs)
    plain.set_weights([w.numpy() for w in relative_attention.weights if "relative" not in w.path])
    assert not np.allclose(plain(inputs).numpy(), relative_attention(inputs).numpy(), atol=1e-3)


def test_shift_equivariance_without_mask(relative_attention, inputs):
    # No absolute positions anywhere: shifting a sequence right by one
    # (padding the front, masked out) shifts the outputs of the real tokens.
    shifted = np.concatenate([np.zeros_like(inputs[:, :1]), inputs[:, :-1]], axis=1)
    keys = np.ones((2, 1, LENGTH), bool)
    keys_shifted = keys.copy()
    keys_shifted[:, :, 0] = False
    keys[:, :, -1] = False  # the same real tokens on both sides
    before = relative_attention(inputs, attention_mask=keys).numpy()
    after = relative_attention(shifted, attention_mask=keys_shifted).numpy()
    np.testing.assert_allclose(after[:, 1:], before[:, :-1], atol=1e-5)


def test_cached_decoding_equals_full_causal(relative_attention, inputs):
    full = relative_attention(inputs, attention_mask=causal_mask(LENGTH)).numpy()
    compiled = tf.function(relative_attention.__call__, jit_compile=True)
    for step_fn in (relative_attention, compiled):
        cache = relative_attention.initial_cache(2, LENGTH)
        outputs = []
        for index in range(LENGTH):
            mask = tf.range(LENGTH)[None, None, :] <= index
            output, cache = step_fn(
                inputs[:, index : index + 1],
                attention_mask=mask,
                cache=cache,
                cache_update_index=tf.constant(index),
            )
            outputs.append(np.asarray(output))
        np.testing.assert_allclose(np.concatenate(outputs, axis=1), full, atol=1e-5)


def test_tables_have_t2t_shapes(relative_attention):
    vocab = 2 * MAX_DISTANCE + 1
    assert tuple(relative_attention.relative_key_embeddings.shape) == (vocab, DEPTH)
    assert tuple(relative_attention.relative_value_embeddings.shape) == (vocab, DEPTH)


def test_memory_is_refused(inputs):
    layer = MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN, max_relative_position=3)
    with pytest.raises(ValueError, match="is self-attention; pass memory=None"):
        layer(inputs, memory=inputs)


@pytest.mark.parametrize("value", [-1, 2.5, True])
def test_bad_max_relative_position_raises(value):
    with pytest.raises(ValueError, match="max_relative_position must be an int >= 0"):
        MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN, max_relative_position=value)


def test_get_config_round_trip():
    layer = MultiHeadAttention(2, 8, 8, 4, max_relative_position=5)
    config = layer.get_config()
    assert config["max_relative_position"] == 5
    assert MultiHeadAttention.from_config(config).get_config() == config
