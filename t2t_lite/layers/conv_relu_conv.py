"""T2T's conv_relu_conv feed-forward block, with a causal decode cache."""

from collections.abc import Sequence

import keras
from keras import ops

from t2t_lite.layers._utils import (
    clone_initializer,
    make_dropout,
    validate_broadcast_dims,
    validate_rate,
)

_PADDINGS = ("SAME", "LEFT")


def _zero_out_padding(x, kernel_size, nonpadding_mask):
    """T2T's `maybe_zero_out_padding`: only a kernel wider than 1 mixes positions,
    so only then can padded positions leak into real ones."""
    if kernel_size == 1 or nonpadding_mask is None:
        return x
    mask = ops.cast(nonpadding_mask, x.dtype)
    return x * ops.expand_dims(mask, -1)


@keras.saving.register_keras_serializable(package="t2t_lite")
class ConvReluConv(keras.layers.Layer):
    """Feed-forward block of two 1-D convolutions: Conv1D + ReLU, dropout, Conv1D.

    `padding="SAME"` centres the kernels (encoder); `padding="LEFT"` pads
    `kernel_size - 1` zeros on the left so output `t` only sees inputs `<= t`
    (decoder). With a `nonpadding_mask`, padded positions are zeroed before
    each convolution wider than 1, so they never leak into real positions.

    Incremental decoding (LEFT only, `second_kernel_size == 1`): pass `cache`
    `[batch, first_kernel_size - 1, channels]` holding the previous inputs
    (`initial_cache` gives zeros, which equal the causal left padding); the
    layer returns `(output, new_cache)` with the last `first_kernel_size - 1`
    inputs.

    Args:
        filter_size: channels of the first convolution.
        output_size: channels of the output.
        first_kernel_size: width of the first convolution (T2T's
            `conv_first_kernel`).
        second_kernel_size: width of the second convolution.
        padding: `"SAME"` or `"LEFT"`.
        dropout: dropout rate after the ReLU (T2T's `relu_dropout`).
        dropout_broadcast_dims: dimensions of `[batch, length, filter_size]`
            along which one dropout mask is shared.
        kernel_initializer: initializer of both kernels.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        x: `[batch, length, channels]`.
        nonpadding_mask: optional `[batch, length]`, 1 at real positions.
        cache: optional decode cache, see above.
        training: whether dropout is active.

    Returns:
        `[batch, length, output_size]`, or `(output, new_cache)` with a cache.

    Example:
    >>> ffn = ConvReluConv(32, 8, first_kernel_size=3, padding="LEFT")
    >>> x = np.ones((2, 4, 8), "float32")
    >>> ffn(x).shape
    TensorShape([2, 4, 8])
    >>> step, cache = ffn(x[:, :1], cache=ffn.initial_cache(2, 8))
    """

    def __init__(
        self,
        filter_size: int,
        output_size: int,
        first_kernel_size: int = 3,
        second_kernel_size: int = 1,
        padding: str = "SAME",
        dropout: float = 0.0,
        dropout_broadcast_dims: Sequence[int] = (),
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        name = type(self).__name__
        for arg, value in (
            ("filter_size", filter_size),
            ("output_size", output_size),
            ("first_kernel_size", first_kernel_size),
            ("second_kernel_size", second_kernel_size),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {arg} must be a positive int, got {value!r}.")
        if padding not in _PADDINGS:
            raise ValueError(
                f"{name}: unknown padding {padding!r}; use 'SAME' (encoder) or "
                "'LEFT' (causal decoder)."
            )
        self.filter_size = filter_size
        self.output_size = output_size
        self.first_kernel_size = first_kernel_size
        self.second_kernel_size = second_kernel_size
        self.padding = padding
        self.dropout = validate_rate(dropout, name)
        self.dropout_broadcast_dims = validate_broadcast_dims(dropout_broadcast_dims, 3, name)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        # LEFT pads by hand and runs VALID, so the kernel sees no future input.
        conv_padding = "same" if self.padding == "SAME" else "valid"

        def conv(filters, kernel_size, name):
            return keras.layers.Conv1D(
                filters,
                kernel_size,
                padding=conv_padding,
                kernel_initializer=clone_initializer(self.kernel_initializer),
                dtype=self.dtype_policy,
                name=name,
            )

        # Length None: the layer may first be called on a single decode step,
        # shorter than the kernel, and the weights do not depend on length.
        input_shape = (input_shape[0], None, input_shape[-1])
        self._first_conv = conv(self.filter_size, self.first_kernel_size, "conv1")
        self._first_conv.build(input_shape)
        self._dropout_layer = make_dropout(
            self.dropout, self.dropout_broadcast_dims, 3, self.dtype_policy, "dropout"
        )
        self._second_conv = conv(self.output_size, self.second_kernel_size, "conv2")
        self._second_conv.build((input_shape[0], None, self.filter_size))
        self.built = True

    def initial_cache(self, batch_size, channels: int, dtype=None):
        """Returns the all-zero decode cache `[batch, first_kernel_size - 1, channels]`.

        Args:
            batch_size: int or scalar int tensor.
            channels: the input's channel count.
            dtype: cache dtype; defaults to the layer's compute dtype.
        """
        return ops.zeros(
            (batch_size, self.first_kernel_size - 1, channels),
            dtype=dtype or self.compute_dtype,
        )

    def _causal_conv(self, conv, x, kernel_size):
        if self.padding == "LEFT" and kernel_size > 1:
            x = ops.pad(x, [[0, 0], [kernel_size - 1, 0], [0, 0]])
        return conv(x)

    def call(self, x, nonpadding_mask=None, cache=None, training=None):
        if cache is not None and (self.padding != "LEFT" or self.second_kernel_size != 1):
            raise ValueError(
                f"{type(self).__name__}: a decode cache needs padding='LEFT' and "
                f"second_kernel_size=1; got padding={self.padding!r}, "
                f"second_kernel_size={self.second_kernel_size}."
            )
        x = ops.cast(x, self.compute_dtype)
        x = _zero_out_padding(x, self.first_kernel_size, nonpadding_mask)
        if cache is None:
            hidden = self._causal_conv(self._first_conv, x, self.first_kernel_size)
        else:
            # The cached inputs stand in for the causal left padding.
            window = ops.concatenate([ops.cast(cache, x.dtype), x], axis=1)
            hidden = self._first_conv(window)
            keep = self.first_kernel_size - 1
            new_cache = window[:, -keep:] if keep else cache
            new_cache = ops.cast(new_cache, cache.dtype)
        hidden = ops.relu(hidden)
        if self._dropout_layer is not None:
            hidden = self._dropout_layer(hidden, training=training)
        hidden = _zero_out_padding(hidden, self.second_kernel_size, nonpadding_mask)
        output = self._causal_conv(self._second_conv, hidden, self.second_kernel_size)
        if cache is not None:
            return output, new_cache
        return output

    def get_config(self):
        config = super().get_config()
        config.update(
            filter_size=self.filter_size,
            output_size=self.output_size,
            first_kernel_size=self.first_kernel_size,
            second_kernel_size=self.second_kernel_size,
            padding=self.padding,
            dropout=self.dropout,
            dropout_broadcast_dims=list(self.dropout_broadcast_dims),
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
