"""The attention's batched matmuls, in the form TensorFlow's own CPU kernel runs fastest.

TensorFlow's batched matmul (its own kernel, not oneDNN's) runs a batch of
products of more than 128 x 128 multiply-adds one after another, each
product split across the threads, which is slow at the attention's shapes.
A product whose left side is a single row goes down the kernel's other
path, whole products sharded across the threads. So here each row of the
left matrix is its own batch entry against the right matrix, broadcast: the
same sums, as vector-matrix products over a right matrix that stays in the
L1 cache. The gradient is written out so that its four products take the
same form (autodiff of the broadcast would make a copy of the right
matrix's gradient per row and sum them). It pays only while the right
matrix is small (`ROWS_MAX_RIGHT_ELEMENTS`), and only with TensorFlow's own
kernels: under oneDNN (`tf_uses_onednn`), XLA, on GPUs, in other dtypes and
on other Keras backends it is the plain batched matmul. Timings:
docs/design.md, "Formulations chosen for oneDNN on CPU".
"""

import keras
from keras import ops

from t2t_lite.layers.tf_kernels import in_xla_context, tf_uses_onednn

# The largest right-hand matrix, in elements, multiplied row by row: the
# measured crossover (112 x 64 float32 is 28 KiB of a 32 KiB L1 data cache).
ROWS_MAX_RIGHT_ELEMENTS = 112 * 64


def attention_matmul(a, b, transpose_b: bool = False):
    """`a @ b`, or `a @ b^T`, for each of the leading `[batch, heads]`.

    Args:
        a: `[batch, heads, m, k]`.
        b: `[batch, heads, k, n]`, or `[batch, heads, n, k]` with `transpose_b`.
        transpose_b: whether `b`'s last axis is the one contracted.

    Returns:
        `[batch, heads, m, n]` in the inputs' dtype.

    Example:
    >>> import numpy as np
    >>> queries = np.ones((2, 4, 3, 8), "float32")
    >>> keys = np.ones((2, 4, 5, 8), "float32")
    >>> logits = attention_matmul(queries, keys, transpose_b=True)
    >>> tuple(logits.shape), float(logits[0, 0, 0, 0])
    ((2, 4, 3, 5), 8.0)
    """
    if not _row_by_row_available(a, b):
        equation = "bhmk,bhnk->bhmn" if transpose_b else "bhmk,bhkn->bhmn"
        return ops.einsum(equation, a, b)
    import tensorflow as tf

    # As written, not converted by autograph: in one full test run, but not
    # alone, the converted `grad` was called with three arguments.
    return tf.autograph.experimental.do_not_convert(_row_by_row_matmul)(a, b, transpose_b)


def _row_by_row_available(*tensors) -> bool:
    """Whether TensorFlow's own CPU kernel will run these float32 products."""
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf

    return (
        all(ops.dtype(t) == "float32" for t in tensors)
        and not tf_uses_onednn()
        and not in_xla_context()
        and not tf.config.list_logical_devices("GPU")
    )


def _row_by_row_matmul(a, b, transpose_b: bool):
    import tensorflow as tf

    @tf.custom_gradient
    def matmul(a, b):
        def grad(upstream):
            if transpose_b:  # c = a b^T: da = g b, db = g^T a
                return _product(upstream, b), _product(upstream, a, transpose_a=True)
            # c = a b: da = g b^T, db = a^T g
            return _product(upstream, b, transpose_b=True), _product(a, upstream, transpose_a=True)

        return _product(a, b, transpose_b=transpose_b), grad

    return matmul(tf.convert_to_tensor(a), tf.convert_to_tensor(b))


def _product(a, b, transpose_a: bool = False, transpose_b: bool = False):
    """One product, row by row when `b` is small enough.

    That is decided when traced if the shapes are known, else when run.
    """
    import tensorflow as tf

    def plain():
        return tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)

    def row_by_row():
        left = tf.linalg.matrix_transpose(a) if transpose_a else a
        # [..., m, 1, k] x [..., 1, k, n]: one single-row product per row of `left`.
        # (expand_dims rather than [..., None, :]: TFLite's converter lowers it.)
        products = tf.matmul(
            tf.expand_dims(left, -2), tf.expand_dims(b, -3), transpose_b=transpose_b
        )
        return tf.squeeze(products, -2)

    right_elements = b.shape[-1] * b.shape[-2] if None not in b.shape[-2:] else None
    if right_elements is not None:
        return row_by_row() if right_elements <= ROWS_MAX_RIGHT_ELEMENTS else plain()
    right_elements = tf.shape(b)[-1] * tf.shape(b)[-2]
    return tf.cond(right_elements <= ROWS_MAX_RIGHT_ELEMENTS, row_by_row, plain)
