"""attention_matmul: TensorFlow's batched matmul row by row where its own CPU kernel runs it."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers.attention_matmul import ROWS_MAX_RIGHT_ELEMENTS, attention_matmul
from t2t_lite.platform import tf_uses_onednn

EQUATIONS = {False: "bhmk,bhkn->bhmn", True: "bhmk,bhnk->bhmn"}


def _operands(rng, m, k, n, transpose_b):
    a = rng.normal(size=(2, 3, m, k)).astype("float32")
    b_shape = (2, 3, n, k) if transpose_b else (2, 3, k, n)
    return a, rng.normal(size=b_shape).astype("float32")


def _value_and_grads(matmul, a, b, weights):
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        # A nonlinear loss, so each gradient product sees a different upstream.
        loss = tf.reduce_sum(tf.sin(matmul(a, b)) * weights)
    return [matmul(a, b), *tape.gradient(loss, [a, b])]


# Small: every product row by row; large: the right matrix past the limit (plain).
@pytest.mark.parametrize("m, k, n", [(5, 4, 6), (3, 64, 120)], ids=["small", "large"])
@pytest.mark.parametrize("transpose_b", [False, True], ids=["a_b", "a_bT"])
@pytest.mark.parametrize("shapes", ["static", "dynamic"])
def test_values_and_gradients_are_the_batched_matmuls(rng, m, k, n, transpose_b, shapes):
    a, b = _operands(rng, m, k, n, transpose_b)
    weights = rng.normal(size=(2, 3, m, n)).astype("float32")
    spec = [tf.TensorSpec([None] * 4 if shapes == "dynamic" else x.shape) for x in (a, b)]
    spec.append(tf.TensorSpec(weights.shape))

    @tf.function(input_signature=spec)
    def ours(a, b, weights):
        return _value_and_grads(lambda x, y: attention_matmul(x, y, transpose_b), a, b, weights)

    @tf.function(input_signature=spec)
    def einsum(a, b, weights):
        return _value_and_grads(lambda x, y: tf.einsum(EQUATIONS[transpose_b], x, y), a, b, weights)

    for got, expected in zip(ours(a, b, weights), einsum(a, b, weights), strict=True):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)


def _row_by_row_products(function, *args, jit_compile=False) -> int:
    """How many single-row batched matmuls (rank-5 operands) the traced graph holds."""
    graph = tf.function(function, jit_compile=jit_compile).get_concrete_function(*args).graph
    return sum(
        op.type == "BatchMatMulV2" and op.inputs[0].shape.rank == 5 for op in graph.get_operations()
    )


def test_the_limit_separates_row_by_row_from_plain():
    side = ROWS_MAX_RIGHT_ELEMENTS // 64
    within = tf.zeros([1, 2, 8, 64]), tf.zeros([1, 2, side, 64])
    beyond = tf.zeros([1, 2, 8, 64]), tf.zeros([1, 2, side + 1, 64])
    logits = lambda q, k: attention_matmul(q, k, transpose_b=True)  # noqa: E731
    assert _row_by_row_products(logits, *within) == (0 if tf_uses_onednn() else 1)
    assert _row_by_row_products(logits, *beyond) == 0


def test_xla_bfloat16_and_onednn_get_the_plain_matmul():
    q = tf.zeros([1, 2, 8, 16])
    plain = lambda q: attention_matmul(q, q, transpose_b=True)  # noqa: E731
    assert _row_by_row_products(plain, q) == (0 if tf_uses_onednn() else 1)
    assert _row_by_row_products(plain, q, jit_compile=True) == 0
    assert _row_by_row_products(plain, tf.cast(q, tf.bfloat16)) == 0
    # The subprocess test in tests/test_platform.py covers oneDNN on and off.
