import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers import SymbolEmbedding

VOCAB = 11
HIDDEN = 16
IDS = np.array([[3, 5, 1, 0, 0], [10, 2, 0, 0, 0]])


@pytest.fixture(scope="module")
def embedding():
    layer = SymbolEmbedding(VOCAB, HIDDEN)
    layer(IDS)
    return layer


def test_scaled_by_sqrt_depth_and_padding_zeroed(embedding):
    table = embedding.embeddings.numpy()
    out = embedding(IDS).numpy()
    assert out.shape == (2, 5, HIDDEN)
    expected = table[IDS] * HIDDEN**0.5 * (IDS != 0)[..., None]
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert not out[IDS == 0].any()


def test_unscaled():
    layer = SymbolEmbedding(VOCAB, HIDDEN, scale_by_sqrt_depth=False)
    out = layer(IDS).numpy()
    np.testing.assert_allclose(out[0, 0], layer.embeddings.numpy()[3], rtol=1e-6)


def test_t2t_initialization():
    layer = SymbolEmbedding(400, 64)
    layer.build()
    table = layer.embeddings.numpy()
    assert table.shape == (400, 64)
    assert abs(table.mean()) < 0.01
    assert table.std() == pytest.approx(64**-0.5, rel=0.05)


def test_logits_are_hidden_times_transposed_table(embedding, rng):
    hidden = rng.normal(size=(2, 3, HIDDEN)).astype("float32")
    logits = embedding.logits(hidden)
    assert logits.shape == (2, 3, VOCAB)
    assert logits.dtype == tf.float32
    np.testing.assert_allclose(logits.numpy(), hidden @ embedding.embeddings.numpy().T, atol=1e-5)


def test_logits_are_float32_under_mixed_bfloat16(mixed_bfloat16, rng):
    layer = SymbolEmbedding(VOCAB, HIDDEN)
    logits = layer.logits(layer(IDS))
    assert logits.dtype == tf.float32

    class OutputHead(keras.layers.Layer):
        """A bfloat16 outer layer: its autocast scope must not reach the table."""

        def call(self, hidden):
            return layer.logits(hidden)

    hidden = rng.normal(size=(2, 3, HIDDEN)).astype("float32")
    logits = OutputHead()(hidden)
    assert logits.dtype == tf.float32
    # The head casts its input to bfloat16; the table must stay float32.
    rounded = tf.cast(tf.cast(hidden, tf.bfloat16), tf.float32).numpy()
    expected = rounded @ layer.embeddings.numpy().T
    np.testing.assert_allclose(logits.numpy(), expected, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, message",
    [(dict(vocab_size=0), "vocab_size"), (dict(hidden_size=None), "hidden_size")],
)
def test_bad_arguments_raise(kwargs, message):
    args = dict(vocab_size=VOCAB, hidden_size=HIDDEN)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        SymbolEmbedding(**args)


def test_layer_contract(run_layer_test):
    run_layer_test(
        SymbolEmbedding,
        dict(vocab_size=VOCAB, hidden_size=HIDDEN, scale_by_sqrt_depth=False, name="symbols"),
        IDS,
        expected_output_shape=(2, 5, HIDDEN),
        expected_num_trainable_weights=1,  # the table
        expected_trainable_params=176,  # 11 * 16
    )
