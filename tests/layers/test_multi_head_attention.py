"""MultiHeadAttention: T2T numerics, masks, the decode cache, relative self-attention."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import MultiHeadAttention
from t2t_lite.layers.multi_head_attention import CACHE_BLOCK

HIDDEN = 16
HEADS = 2
LENGTH = 6


@pytest.fixture(scope="module")
def self_attention():
    layer = MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN)
    layer(np.zeros((1, LENGTH, HIDDEN), "float32"))
    return layer


@pytest.fixture(scope="module")
def inputs():
    return np.random.default_rng(0).normal(size=(2, LENGTH, HIDDEN)).astype("float32")


def causal_mask(length):
    return np.tril(np.ones((length, length), bool))[None]


def decode_step_by_step(layer, inputs, step_fn=None, grow=False):
    """Runs cached self-attention one position at a time; returns all outputs.
    A fixed-length cache gets the caller's mask, a growing one masks itself."""
    batch, length, _ = inputs.shape
    cache = layer.initial_cache(batch, 0 if grow else length)
    step_fn = step_fn or layer
    outputs = []
    for index in range(length):
        # Only keys up to the current index are real; the rest of the cache is 0.
        mask = None if grow else tf.range(length)[None, None, :] <= index
        output, cache = step_fn(
            inputs[:, index : index + 1],
            attention_mask=mask,
            cache=cache,
            cache_update_index=tf.constant(index),
            grow_cache=grow,
        )
        outputs.append(output)
    return np.concatenate([np.asarray(o, "float32") for o in outputs], axis=1), cache


def test_output_shape_and_projection_sizes():
    layer = MultiHeadAttention(4, key_channels=8, value_channels=12, output_channels=6)
    out = layer(np.ones((2, 3, 10), "float32"), memory=np.ones((2, 5, 14), "float32"))
    assert out.shape == (2, 3, 6)
    shapes = sorted(tuple(w.shape) for w in layer.weights)
    assert shapes == [(10, 8), (12, 6), (14, 8), (14, 12)]
    assert not any("bias" in w.path for w in layer.weights)


def test_matches_numpy_reference(self_attention, inputs):
    q_kernel, k_kernel, v_kernel, o_kernel = (
        layer.kernel.numpy()
        for layer in (
            self_attention._query_dense,
            self_attention._key_dense,
            self_attention._value_dense,
            self_attention._output_dense,
        )
    )
    mask = causal_mask(LENGTH)

    def heads(x):
        return x.reshape(x.shape[0], x.shape[1], HEADS, -1).transpose(0, 2, 1, 3)

    q = heads(inputs @ q_kernel) * (HIDDEN // HEADS) ** -0.5
    k, v = heads(inputs @ k_kernel), heads(inputs @ v_kernel)
    logits = q @ k.transpose(0, 1, 3, 2) + np.where(mask[:, None], 0.0, -1e9)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    attended = (weights @ v).transpose(0, 2, 1, 3).reshape(2, LENGTH, HIDDEN)
    expected = attended @ o_kernel
    actual = self_attention(inputs, attention_mask=mask).numpy()
    np.testing.assert_allclose(actual, expected, atol=1e-5)


def test_padding_invariance(self_attention, inputs):
    real = 4
    mask = np.zeros((2, 1, LENGTH), bool)
    mask[:, :, :real] = True
    changed = inputs.copy()
    changed[:, real:] = 100.0
    before = self_attention(inputs, attention_mask=mask).numpy()
    after = self_attention(changed, attention_mask=mask).numpy()
    np.testing.assert_allclose(after[:, :real], before[:, :real], atol=1e-6)


def test_causal_mask_hides_the_future(self_attention, inputs):
    mask = causal_mask(LENGTH)
    before = self_attention(inputs, attention_mask=mask).numpy()
    for t in range(LENGTH - 1):
        changed = inputs.copy()
        changed[:, t + 1 :] += 5.0
        after = self_attention(changed, attention_mask=mask).numpy()
        np.testing.assert_allclose(after[:, : t + 1], before[:, : t + 1], atol=1e-6)
        assert not np.allclose(after[:, t + 1 :], before[:, t + 1 :])


@pytest.mark.parametrize("grow", [False, True], ids=["fixed", "growing"])
def test_cached_decoding_equals_full_causal(self_attention, inputs, grow):
    full = self_attention(inputs, attention_mask=causal_mask(LENGTH)).numpy()
    stepped, cache = decode_step_by_step(self_attention, inputs, grow=grow)
    np.testing.assert_allclose(stepped, full, atol=1e-5)
    length = CACHE_BLOCK if grow else LENGTH
    assert [c.shape for c in cache] == [(2, HEADS, length, HIDDEN // HEADS)] * 2


def test_growing_cache_in_a_graph_loop_grows_by_blocks_and_equals_full(rng):
    """How decoding uses it: a `tf.while_loop` whose cache has an unknown
    length, across two block boundaries, with relative positions (which
    read the query's position from the index)."""
    layer = MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN, max_relative_position=3)
    length = 2 * CACHE_BLOCK + 1
    inputs = rng.normal(size=(2, length, HIDDEN)).astype("float32")
    full = layer(inputs, attention_mask=causal_mask(length)).numpy()

    @tf.function
    def decode(inputs):
        def body(index, outputs, cache):
            output, cache = layer(
                inputs[:, index : index + 1], cache=cache, cache_update_index=index, grow_cache=True
            )
            return index + 1, outputs.write(index, output[:, 0]), cache

        cache = layer.initial_cache(2, 0)
        outputs = tf.TensorArray(tf.float32, size=length)
        growing = [tf.TensorShape([2, HEADS, None, HIDDEN // HEADS])] * 2
        _, outputs, cache = tf.while_loop(
            lambda index, *_: index < length,
            body,
            (tf.constant(0), outputs, cache),
            shape_invariants=(tf.TensorShape([]), tf.TensorShape(None), tuple(growing)),
        )
        return tf.transpose(outputs.stack(), [1, 0, 2]), cache

    stepped, cache = decode(inputs)
    np.testing.assert_allclose(stepped.numpy(), full, atol=1e-5)
    assert [c.shape for c in cache] == [(2, HEADS, 3 * CACHE_BLOCK, HIDDEN // HEADS)] * 2


def test_growing_cache_takes_an_index_and_no_mask(self_attention, inputs):
    cache = self_attention.initial_cache(2, 0)
    with pytest.raises(ValueError, match="grow_cache=True writes at cache_update_index"):
        self_attention(inputs[:, :1], cache=cache, grow_cache=True)
    with pytest.raises(ValueError, match="masks the positions after it itself"):
        self_attention(
            inputs[:, :1],
            attention_mask=np.ones((1, 1, 1), bool),
            cache=cache,
            cache_update_index=0,
            grow_cache=True,
        )


def test_cached_step_under_xla_matches_eager(self_attention, inputs):
    compiled = tf.function(self_attention.__call__, jit_compile=True)
    eager, eager_cache = decode_step_by_step(self_attention, inputs)
    xla, xla_cache = decode_step_by_step(self_attention, inputs, step_fn=compiled)
    np.testing.assert_allclose(xla, eager, atol=1e-5)
    for xla_part, eager_part in zip(xla_cache, eager_cache, strict=True):
        np.testing.assert_allclose(xla_part.numpy(), eager_part.numpy(), atol=1e-5)


def test_cross_attention_with_memory_cache_equals_direct(rng):
    layer = MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN)
    query = rng.normal(size=(2, 3, HIDDEN)).astype("float32")
    memory = rng.normal(size=(2, 5, 12)).astype("float32")
    memory_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)[:, None, :]
    direct = layer(query, memory=memory, attention_mask=memory_mask).numpy()
    memory_cache = layer.compute_memory_cache(memory)
    assert [c.shape for c in memory_cache] == [(2, HEADS, 5, HIDDEN // HEADS)] * 2
    for t in range(3):
        output, returned = layer(
            query[:, t : t + 1], attention_mask=memory_mask, cache=memory_cache
        )
        assert all(r is m for r, m in zip(returned, memory_cache, strict=True))
        np.testing.assert_allclose(output.numpy(), direct[:, t : t + 1], atol=1e-5)


def test_dropout_broadcast_dims(inputs):
    # Broadcasting over all four dims leaves one coin flip for the whole
    # [batch, heads, query, key] weights: all kept (scaled by 2) or all dropped.
    layer = MultiHeadAttention(
        HEADS, HIDDEN, HIDDEN, HIDDEN, dropout=0.5, dropout_broadcast_dims=(0, 1, 2, -1)
    )
    inference = layer(inputs).numpy()
    for _ in range(4):
        trained = layer(inputs, training=True).numpy()
        assert np.allclose(trained, 0.0) or np.allclose(trained, 2 * inference, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(key_channels=10), "key_channels=10 is not divisible by num_heads=4"),
        (dict(value_channels=6), "value_channels=6 is not divisible"),
        (dict(dropout=1.0), "dropout"),
        (dict(dropout_broadcast_dims=(4,)), "out of range"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    args = dict(num_heads=4, key_channels=8, value_channels=8, output_channels=8)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(**args)


def test_cache_with_different_key_and_value_channels(rng):
    layer = MultiHeadAttention(2, 8, 4, 6)
    inputs = rng.normal(size=(2, LENGTH, 8)).astype("float32")
    full = layer(inputs, attention_mask=causal_mask(LENGTH)).numpy()
    stepped, cache = decode_step_by_step(layer, inputs)
    np.testing.assert_allclose(stepped, full, atol=1e-5)
    assert [c.shape for c in cache] == [(2, 2, LENGTH, 4), (2, 2, LENGTH, 2)]


def test_mixed_bfloat16_cached_decoding(mixed_bfloat16, inputs):
    layer = MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN)
    full = layer(inputs, attention_mask=causal_mask(LENGTH))
    assert full.dtype == tf.bfloat16
    assert layer.weights[0].dtype == "float32"
    stepped, cache = decode_step_by_step(layer, inputs)
    assert [c.dtype for c in cache] == [tf.bfloat16] * 2
    np.testing.assert_allclose(stepped, full.numpy().astype("float32"), atol=5e-2)


def test_memory_cache_on_an_unbuilt_layer(rng):
    layer = MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN)
    memory = rng.normal(size=(1, 4, HIDDEN)).astype("float32")
    query = rng.normal(size=(1, 1, HIDDEN)).astype("float32")
    output, _ = layer(query, cache=layer.compute_memory_cache(memory))
    np.testing.assert_allclose(output.numpy(), layer(query, memory=memory).numpy(), atol=1e-5)


# -- relative self-attention (T2T's dot_product_relative) ----------------------

DEPTH = HIDDEN // HEADS
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


def relative_reference(layer, inputs, mask):
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


def test_relative_matches_shaw_reference(relative_attention, inputs):
    mask = causal_mask(LENGTH)
    actual = relative_attention(inputs, attention_mask=mask).numpy()
    np.testing.assert_allclose(
        actual, relative_reference(relative_attention, inputs, mask), atol=1e-5
    )


def test_relative_tables_change_the_output(relative_attention, inputs):
    plain = MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN)
    plain(inputs)
    plain.set_weights([w.numpy() for w in relative_attention.weights if "relative" not in w.path])
    assert not np.allclose(plain(inputs).numpy(), relative_attention(inputs).numpy(), atol=1e-3)


def test_relative_shift_equivariance(relative_attention, inputs):
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


def test_relative_cached_decoding_equals_full_causal(relative_attention, inputs):
    full = relative_attention(inputs, attention_mask=causal_mask(LENGTH)).numpy()
    compiled = tf.function(relative_attention.__call__, jit_compile=True)
    for step_fn in (relative_attention, compiled):
        stepped, _ = decode_step_by_step(relative_attention, inputs, step_fn)
        np.testing.assert_allclose(stepped, full, atol=1e-5)


def test_relative_tables_have_t2t_shapes(relative_attention):
    vocab = 2 * MAX_DISTANCE + 1
    assert tuple(relative_attention.relative_key_embeddings.shape) == (vocab, DEPTH)
    assert tuple(relative_attention.relative_value_embeddings.shape) == (vocab, DEPTH)


def test_relative_memory_is_refused(inputs):
    layer = MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN, max_relative_position=3)
    with pytest.raises(ValueError, match="is self-attention; pass memory=None"):
        layer(inputs, memory=inputs)


@pytest.mark.parametrize("value", [-1, 2.5, True])
def test_bad_max_relative_position_raises(value):
    with pytest.raises(ValueError, match="max_relative_position must be an int >= 0"):
        MultiHeadAttention(HEADS, HIDDEN, HIDDEN, HIDDEN, max_relative_position=value)


@pytest.mark.parametrize(
    "kwargs, query_length, memory_channels, expected_params",
    [
        (
            dict(dropout_broadcast_dims=(1,), kernel_initializer="he_normal", name="attention"),
            LENGTH,
            None,
            1024,  # query, key, value, output kernels: 4 * 16 * 16, no biases
        ),
        # Encoder-decoder attention: keys and values projected from 12 channels.
        (dict(output_channels=8), 3, 12, 768),  # 16 * 16 + 2 * 12 * 16 + 16 * 8
        # Relative: 2 tables of 2 * MAX_DISTANCE + 1 = 5 rows of depth 16 / 2 = 8.
        (dict(max_relative_position=MAX_DISTANCE), LENGTH, None, 1104),  # 1024 + 2 * 5 * 8
    ],
    ids=["self_attention", "encoder_decoder_attention", "relative_self_attention"],
)
def test_layer_contract(run_layer_test, kwargs, query_length, memory_channels, expected_params):
    rng = np.random.default_rng(2)
    inputs = dict(query=rng.normal(size=(2, query_length, HIDDEN)).astype("float32"))
    key_length = query_length
    if memory_channels:
        key_length = 5
        inputs["memory"] = rng.normal(size=(2, key_length, memory_channels)).astype("float32")
    # The second example has 2 padded keys; causal on top for self-attention.
    mask = np.ones((2, query_length, key_length), bool)
    mask[1, :, -2:] = False
    if not memory_channels:
        mask &= causal_mask(query_length)
    inputs["attention_mask"] = mask
    init_kwargs = dict(num_heads=HEADS, key_channels=HIDDEN, value_channels=HIDDEN)
    init_kwargs.update(dict(output_channels=HIDDEN, dropout=0.5), **kwargs)
    run_layer_test(
        MultiHeadAttention,
        init_kwargs,
        inputs,
        expected_output_shape=(2, query_length, init_kwargs["output_channels"]),
        expected_num_trainable_weights=6 if "max_relative_position" in kwargs else 4,
        expected_trainable_params=expected_params,
        supports_dropout=True,
    )
