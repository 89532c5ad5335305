"""Sinusoidal position signal, numerically identical to T2T's."""

import math

import keras
from keras import ops


def get_timing_signal_1d(
    length,
    channels: int,
    min_timescale: float = 1.0,
    max_timescale: float = 1.0e4,
    start_index=0,
):
    """Returns T2T's sinusoid timing signal, float32 `[1, length, channels]`.

    The first `channels // 2` channels are `sin(position * inv_timescale)` and
    the next `channels // 2` are the matching cosines, with timescales spaced
    geometrically from `min_timescale` to `max_timescale`. When `channels` is
    odd the last channel is zero.

    Args:
        length: number of positions; a Python int or a scalar int tensor.
        channels: depth of the signal (a Python int).
        min_timescale: the shortest timescale.
        max_timescale: the longest timescale.
        start_index: position of the first row (a Python int or scalar int
            tensor), e.g. the step index during incremental decoding.

    Returns:
        A float32 tensor (of the Keras backend) of shape `[1, length, channels]`.

    Example:
    >>> get_timing_signal_1d(5, 8, start_index=2).shape
    TensorShape([1, 5, 8])
    """
    # Casting each term separately accepts int32 or int64 tensors alike; the
    # sum is exact for positions below 2**24.
    position = ops.cast(ops.arange(length), "float32") + ops.cast(start_index, "float32")
    num_timescales = channels // 2
    log_timescale_increment = math.log(float(max_timescale) / float(min_timescale)) / max(
        num_timescales - 1, 1
    )
    inv_timescales = min_timescale * ops.exp(
        ops.cast(ops.arange(num_timescales), "float32") * -log_timescale_increment
    )
    scaled_time = ops.expand_dims(position, 1) * ops.expand_dims(inv_timescales, 0)
    signal = ops.concatenate([ops.sin(scaled_time), ops.cos(scaled_time)], axis=1)
    signal = ops.pad(signal, [[0, 0], [0, channels % 2]])
    return ops.expand_dims(signal, 0)


def add_timing_signal_1d(
    x,
    min_timescale: float = 1.0,
    max_timescale: float = 1.0e4,
    start_index=0,
):
    """Adds `get_timing_signal_1d` to `x` of shape `[batch, length, channels]`.

    The signal is cast to `x.dtype`; `channels` must be static.
    """
    length = ops.shape(x)[1]
    channels = x.shape[-1]
    if channels is None:
        raise ValueError("add_timing_signal_1d needs a static channel dimension.")
    signal = get_timing_signal_1d(length, channels, min_timescale, max_timescale, start_index)
    return x + ops.cast(signal, x.dtype)


@keras.saving.register_keras_serializable(package="t2t_lite")
class TimingSignal(keras.layers.Layer):
    """Adds T2T's sinusoidal position signal to a sequence.

    Args:
        min_timescale: the shortest timescale of the sinusoids.
        max_timescale: the longest timescale of the sinusoids.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        x: `[batch, length, channels]`.
        start_index: position of `x[:, 0]`; a Python int or scalar int tensor
            (the decode step during incremental decoding).

    Returns:
        `x` plus the signal, in `x`'s dtype.

    Example:
    >>> import numpy as np
    >>> layer = TimingSignal()
    >>> layer(np.zeros((2, 3, 8), "float32"), start_index=4).shape
    TensorShape([2, 3, 8])
    """

    def __init__(self, min_timescale: float = 1.0, max_timescale: float = 1.0e4, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 < min_timescale <= max_timescale:
            raise ValueError(
                "TimingSignal needs 0 < min_timescale <= max_timescale, got "
                f"min_timescale={min_timescale}, max_timescale={max_timescale}."
            )
        self.min_timescale = float(min_timescale)
        self.max_timescale = float(max_timescale)

    def call(self, x, start_index=0):
        return add_timing_signal_1d(x, self.min_timescale, self.max_timescale, start_index)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(min_timescale=self.min_timescale, max_timescale=self.max_timescale)
        return config
