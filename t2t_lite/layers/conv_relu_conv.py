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
    """T2T's `maybe_zero_out_padding`: padding zeroed when the kernel is wider than 1.

    Only a kernel wider than 1 mixes positions, so only then can padded
    positions leak into real ones.
    """
    if kernel_size == 1 or nonpadding_mask is None:
        return x
    mask = ops.cast(nonpadding_mask, x.dtype)
    return x * ops.expand_dims(mask, -1)


def _per_tap_initializer(initializer, kernel_size):
    """`initializer` for a `[kernel_size, in, out]` kernel, drawn as T2T draws it.

    T2T's taps are separate dense kernels, so a fan-based initializer sees
    fans `in` and `out`; Keras counts `kernel_size` times more for a conv
    kernel. Scaling a VarianceScaling initializer by `kernel_size` restores
    the per-tap distribution; other initializers are used as they are.
    """
    initializer = clone_initializer(initializer)
    if kernel_size == 1 or not isinstance(initializer, keras.initializers.VarianceScaling):
        return initializer
    return keras.initializers.VarianceScaling(
        scale=initializer.scale * kernel_size,
        mode=initializer.mode,
        distribution=initializer.distribution,
        seed=initializer.get_config().get("seed"),
    )


class _TapConv1D(keras.layers.Layer):
    """T2T's `tpu_conv1d`: `kernel_size` dense taps summed, scaled by `kernel_size**-0.5`.

    Tap `i` (an `[in, out]` matrix) multiplies the input shifted by offset
    `first + i`, where `first` is `-((kernel_size - 1) // 2)` for SAME and
    `-(kernel_size - 1)` for LEFT; only tap 0 has a bias (one bias in all):

        y[t] = (b + sum_i x[t + first + i] @ W[i]) * k**-0.5

    Deliberate difference: T2T's code feeds tap 0 the unshifted input
    (`... if i else inputs`, as
    https://github.com/tensorflow/tensor2tensor/issues/1764 reports), so
    offset `first` is never read and offset 0 is read twice: a width-9 encoder FFN never
    sees t-4 and the decoder's never sees t-8. Its docstring and every other
    conv1d mean the window above, which is what runs here; the scale, the
    per-tap initialization and the single bias, which set the optimization
    dynamics, are T2T's.

    It runs as one VALID convolution over the padded input.
    """

    def __init__(self, filters, kernel_size, padding, kernel_initializer, **kwargs):
        super().__init__(**kwargs)
        self.filters = filters
        self.kernel_size = kernel_size
        self.padding = padding
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self._first_offset = -((kernel_size - 1) // 2 if padding == "SAME" else kernel_size - 1)

    def build(self, input_shape):
        self.kernel = self.add_weight(
            shape=(self.kernel_size, input_shape[-1], self.filters),
            initializer=_per_tap_initializer(self.kernel_initializer, self.kernel_size),
            name="kernel",
        )
        self.bias = self.add_weight(shape=(self.filters,), initializer="zeros", name="bias")
        self.built = True

    def call(self, x, pad=True):
        """`pad=False`: `x` already holds the `kernel_size - 1` context inputs."""
        if pad:
            left = -self._first_offset
            x = ops.pad(x, [[0, 0], [left, self.kernel_size - 1 - left], [0, 0]])
        kernel = ops.cast(self.kernel, self.compute_dtype)
        y = ops.conv(x, kernel, padding="valid")  # window position i = offset first + i
        y = y + ops.cast(self.bias, self.compute_dtype)
        return y * ops.cast(self.kernel_size**-0.5, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            filters=self.filters,
            kernel_size=self.kernel_size,
            padding=self.padding,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config


@keras.saving.register_keras_serializable(package="t2t_lite")
class ConvReluConv(keras.layers.Layer):
    """Feed-forward block of two 1-D convolutions: conv + ReLU, dropout, conv.

    T2T's `conv_relu_conv`: both convolutions are T2T's `tpu_conv1d`, a sum
    of `kernel_size` dense taps with a bias on the first tap only, scaled by
    `kernel_size**-0.5` (bias included); with `kernel_size=1` it is a plain
    dense layer. Unlike T2T's code, tap 0 reads the first offset of the
    window, as a convolution does (see `_TapConv1D`).
    `padding="SAME"` centres the window (encoder; odd kernels only, as in
    T2T); `padding="LEFT"` makes it end at `t`, so output `t` only sees
    inputs `<= t` (decoder). With a `nonpadding_mask`, padded positions are
    zeroed before each convolution wider than 1, so they never leak into
    real positions.

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
            along which one dropout mask is shared (T2T's `conv_relu_conv`
            has none).
        kernel_initializer: initializer of every tap's `[in, out]` matrix;
            a VarianceScaling one counts its fans per tap, as in T2T.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        x: `[batch, length, channels]`.
        nonpadding_mask: optional `[batch, length]`, 1 at real positions.
        cache: optional decode cache, see above.
        training: whether dropout is active.

    Returns:
        `[batch, length, output_size]`, or `(output, new_cache)` with a cache.

    Example:
    >>> import numpy as np
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
        if padding == "SAME" and (first_kernel_size % 2 == 0 or second_kernel_size % 2 == 0):
            raise ValueError(
                f"{name}: padding='SAME' needs odd kernel sizes, got "
                f"{first_kernel_size} and {second_kernel_size}."
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
        def conv(filters, kernel_size, name):
            return _TapConv1D(
                filters,
                kernel_size,
                self.padding,
                self.kernel_initializer,
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
            hidden = self._first_conv(x)
        else:
            # The cached inputs stand in for the causal left padding.
            window = ops.concatenate([ops.cast(cache, x.dtype), x], axis=1)
            hidden = self._first_conv(window, pad=False)
            keep = self.first_kernel_size - 1
            new_cache = window[:, -keep:] if keep else cache
            new_cache = ops.cast(new_cache, cache.dtype)
        hidden = ops.relu(hidden)
        if self._dropout_layer is not None:
            hidden = self._dropout_layer(hidden, training=training)
        hidden = _zero_out_padding(hidden, self.second_kernel_size, nonpadding_mask)
        output = self._second_conv(hidden)
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
