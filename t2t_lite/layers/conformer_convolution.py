"""Conformer's convolution module: local context beside self-attention."""

import keras
from keras import ops

from t2t_lite.layers._utils import clone_initializer
from t2t_lite.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="t2t_lite")
class ConformerConvolution(keras.layers.Layer):
    """The convolution module of Conformer (Gulati et al. 2020), as a sublayer.

    Self-attention sees the whole utterance but has no built-in sense of
    what is next to what; this module adds it, cheaply, one channel at a
    time. The paper's module, without its residual and its dropout (the
    encoder layer's pre/post-processing adds them, as for every sublayer):

        h = pointwise_in(x)                  # [batch, length, 2 * channels]
        h = a * sigmoid(b), (a, b) = h       # GLU: [batch, length, channels]
        h = depthwise_conv(h)                # one kernel_size filter per channel
        h = swish(layer_norm(h))
        y = pointwise_out(h)                 # [batch, length, channels]

    A layer norm stands where the paper has batch norm (as ESPnet and
    WeNet allow): it needs no batch statistics, so padding and batch size
    change nothing. The window is centred on the frame (no streaming: a
    causal window and its cache are not written yet). With a
    `nonpadding_mask`, padded positions are zeroed before the depthwise
    convolution and never reach real ones.

    Args:
        kernel_size: odd width of the depthwise convolution (the paper's is
            32, ESPnet's LibriSpeech recipes 31, at 40 ms frames).
        norm_epsilon: epsilon of the layer norm.
        kernel_initializer: initializer of the two pointwise kernels.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        x: `[batch, length, channels]`.
        nonpadding_mask: optional `[batch, length]`, 1 at real positions.

    Returns:
        `[batch, length, channels]`.

    Example:
    >>> import numpy as np
    >>> module = ConformerConvolution(kernel_size=5)
    >>> module(np.ones((2, 7, 8), "float32")).shape
    TensorShape([2, 7, 8])
    """

    def __init__(
        self,
        kernel_size: int = 15,
        norm_epsilon: float = 1e-6,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        name = type(self).__name__
        if (
            isinstance(kernel_size, bool)
            or not isinstance(kernel_size, int)
            or kernel_size < 1
            or kernel_size % 2 == 0
        ):
            raise ValueError(
                f"{name}: kernel_size must be an odd positive int, got {kernel_size!r}."
            )
        self.kernel_size = kernel_size
        self.norm_epsilon = norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        channels = input_shape[-1]
        input_shape = (input_shape[0], None, channels)  # weights do not depend on length

        def pointwise(units, name):
            dense = keras.layers.Dense(
                units,
                kernel_initializer=clone_initializer(self.kernel_initializer),
                dtype=self.dtype_policy,
                name=name,
            )
            dense.build(input_shape)
            return dense

        self._pointwise_in = pointwise(2 * channels, "pointwise_in")
        # Each channel's own filter, [kernel_size, channels, 1]: depthwise.
        # Its fan-in is kernel_size (Keras' fans would count the channels
        # too); PyTorch's default for a depthwise Conv1d, as ESPnet's module
        # starts: uniform within kernel_size ** -0.5.
        bound = self.kernel_size**-0.5
        self.depthwise_kernel = self.add_weight(
            shape=(self.kernel_size, channels, 1),
            initializer=keras.initializers.RandomUniform(-bound, bound),
            name="depthwise_kernel",
        )
        self.depthwise_bias = self.add_weight(
            shape=(channels,), initializer="zeros", name="depthwise_bias"
        )
        self._norm = LayerNorm(epsilon=self.norm_epsilon, dtype=self.dtype_policy, name="norm")
        self._norm.build(input_shape)
        self._pointwise_out = pointwise(channels, "pointwise_out")
        self.built = True

    def call(self, x, nonpadding_mask=None):
        x = ops.cast(x, self.compute_dtype)
        a, b = ops.split(self._pointwise_in(x), 2, axis=-1)
        h = a * ops.sigmoid(b)  # GLU: [batch, length, channels]
        if nonpadding_mask is not None:
            h = h * ops.expand_dims(ops.cast(nonpadding_mask, h.dtype), -1)
        half = (self.kernel_size - 1) // 2
        window = ops.pad(h, [[0, 0], [half, half], [0, 0]])  # centred, length kept
        kernel = ops.cast(self.depthwise_kernel, self.compute_dtype)
        h = ops.depthwise_conv(window, kernel, padding="valid")
        h = h + ops.cast(self.depthwise_bias, self.compute_dtype)
        return self._pointwise_out(ops.silu(self._norm(h)))

    def get_config(self):
        config = super().get_config()
        config.update(
            kernel_size=self.kernel_size,
            norm_epsilon=self.norm_epsilon,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
