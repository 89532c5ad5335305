"""T2T's dense_relu_dense feed-forward block."""

from collections.abc import Sequence

import keras

from t2t_lite.layers._utils import (
    clone_initializer,
    make_dropout,
    validate_broadcast_dims,
    validate_rate,
)


@keras.saving.register_keras_serializable(package="t2t_lite")
class DenseReluDense(keras.layers.Layer):
    """Position-wise feed-forward block: Dense + ReLU, dropout, Dense.

    Both projections have a bias, as in T2T's `dense_relu_dense`.

    Args:
        filter_size: width of the hidden (ReLU) layer.
        output_size: width of the output.
        dropout: dropout rate after the ReLU (T2T's `relu_dropout`).
        dropout_broadcast_dims: dimensions of `[batch, length, filter_size]`
            along which one dropout mask is shared.
        kernel_initializer: initializer of both kernels.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        x: `[batch, length, channels]`.
        training: whether dropout is active.

    Returns:
        `[batch, length, output_size]`.

    Example:
    >>> import numpy as np
    >>> ffn = DenseReluDense(filter_size=32, output_size=8)
    >>> ffn(np.ones((2, 3, 8), "float32")).shape
    TensorShape([2, 3, 8])
    """

    def __init__(
        self,
        filter_size: int,
        output_size: int,
        dropout: float = 0.0,
        dropout_broadcast_dims: Sequence[int] = (),
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        name = type(self).__name__
        for arg, value in (("filter_size", filter_size), ("output_size", output_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {arg} must be a positive int, got {value!r}.")
        self.filter_size = filter_size
        self.output_size = output_size
        self.dropout = validate_rate(dropout, name)
        self.dropout_broadcast_dims = validate_broadcast_dims(dropout_broadcast_dims, 3, name)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        self._filter_dense = keras.layers.Dense(
            self.filter_size,
            activation="relu",
            kernel_initializer=clone_initializer(self.kernel_initializer),
            dtype=self.dtype_policy,
            name="filter",
        )
        self._filter_dense.build(input_shape)
        self._dropout_layer = make_dropout(
            self.dropout, self.dropout_broadcast_dims, 3, self.dtype_policy, "dropout"
        )
        self._output_dense = keras.layers.Dense(
            self.output_size,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            dtype=self.dtype_policy,
            name="output",
        )
        self._output_dense.build(tuple(input_shape[:-1]) + (self.filter_size,))
        self.built = True

    def call(self, x, training=None):
        hidden = self._filter_dense(x)
        if self._dropout_layer is not None:
            hidden = self._dropout_layer(hidden, training=training)
        return self._output_dense(hidden)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.output_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            filter_size=self.filter_size,
            output_size=self.output_size,
            dropout=self.dropout,
            dropout_broadcast_dims=list(self.dropout_broadcast_dims),
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
