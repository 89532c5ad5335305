"""T2T's speech_recognition_bottom, with exact lengths under padding."""

import keras
from keras import ops

from t2t_lite.layers._utils import clone_initializer
from t2t_lite.layers.layer_norm import LayerNorm

# T2T's `layer_norm` epsilon.
_NORM_EPSILON = 1e-6
# Conv2D blocks of stride 2 in time (and frequency): the 4x time reduction.
_NUM_STRIDED_BLOCKS = 2
# Every convolution's extent in time (frames).
_KERNEL_FRAMES = 3


def _strided_size(size: int) -> int:
    """Size of an axis after a VALID kernel-3, stride-2 convolution."""
    return (size - _KERNEL_FRAMES) // 2 + 1


def _mask_frames(x, nonpadding):
    """Zeroes padded frames of `x` `[batch, frames, ...]`, mask `[batch, frames]`."""
    mask = ops.cast(nonpadding, x.dtype)
    for _ in range(len(x.shape) - 2):
        mask = ops.expand_dims(mask, -1)
    return x * mask


@keras.saving.register_keras_serializable(package="t2t_lite")
class SpeechFrontEnd(keras.layers.Layer):
    """Reduces filterbank frames 4x in time and folds frequency into `hidden_size`.

    T2T's `speech_recognition_bottom`: two blocks of Conv2D(`num_filters`,
    3x3, stride 2, no bias) + LayerNorm + ReLU, then a third block whose
    Conv2D (3 frames x all remaining frequency bins, no bias) projects to
    `hidden_size`, again followed by LayerNorm + ReLU. Every LayerNorm is
    T2T's `layer_norm`: over the last (channel) axis, epsilon 1e-6, a scale
    and a bias, computed in float32. Unlike T2T, the front end is exact
    under padding: padded frames are zeroed before every convolution and the
    time axis is padded by hand (2 zeros on the right before every conv, as
    T2T pads the last one), so output `t` of a strided block
    always covers input frames `2t .. 2t+2` and a real output never depends
    on padding or on how much of it there is. The frequency axis is VALID
    (80 -> 39 -> 19 bins).

    Args:
        hidden_size: output depth.
        num_filters: channels of the two strided convolutions.
        kernel_initializer: initializer of the three kernels.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        features: `[batch, frames, bins, channels]` (e.g. 80 mel bins and 3
            channels: features, deltas, delta-deltas); `bins` and `channels`
            must be static, `frames` may be dynamic.
        nonpadding_mask: `[batch, frames]`, 1 at real frames (right-padded);
            `None` means every frame is real.

    Returns:
        `(outputs, reduced_nonpadding_mask)`: `outputs` is
        `[batch, ceil(frames / 4), hidden_size]`, non-negative (it ends in a
        ReLU) and zero at padded positions;
        the mask is `nonpadding_mask[:, ::4]` (float32 ones when no mask was
        given).

    Example:
    >>> import numpy as np
    >>> front_end = SpeechFrontEnd(hidden_size=16, num_filters=8)
    >>> features = np.random.rand(2, 13, 80, 3).astype("float32")
    >>> mask = np.ones((2, 13), "float32")
    >>> outputs, reduced_mask = front_end(features, mask)
    >>> outputs.shape, reduced_mask.shape
    (TensorShape([2, 4, 16]), TensorShape([2, 4]))
    """

    def __init__(
        self,
        hidden_size: int,
        num_filters: int = 128,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        name = type(self).__name__
        for arg, value in (("hidden_size", hidden_size), ("num_filters", num_filters)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {arg} must be a positive int, got {value!r}.")
        self.hidden_size = hidden_size
        self.num_filters = num_filters
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        if len(input_shape) != 4 or input_shape[2] is None or input_shape[3] is None:
            raise ValueError(
                f"{type(self).__name__}: features must be [batch, frames, bins, "
                f"channels] with static bins and channels, got {input_shape}."
            )
        bins, channels = input_shape[2], input_shape[3]
        if _strided_size(_strided_size(bins)) < 1:
            raise ValueError(f"{type(self).__name__}: needs at least 7 frequency bins, got {bins}.")

        def conv(filters, kernel_size, strides, name):
            return keras.layers.Conv2D(
                filters,
                kernel_size,
                strides=strides,
                padding="valid",
                use_bias=False,
                kernel_initializer=clone_initializer(self.kernel_initializer),
                dtype=self.dtype_policy,
                name=name,
            )

        def norm(name, shape):
            layer = LayerNorm(epsilon=_NORM_EPSILON, dtype="float32", name=name)
            layer.build(shape)
            return layer

        self._block_convs = []
        self._block_norms = []
        in_channels = channels
        for i in range(_NUM_STRIDED_BLOCKS):
            block_conv = conv(self.num_filters, (_KERNEL_FRAMES, 3), (2, 2), f"conv{i + 1}")
            block_conv.build((None, None, bins, in_channels))
            bins = _strided_size(bins)
            self._block_convs.append(block_conv)
            self._block_norms.append(
                norm(f"layer_norm{i + 1}", (None, None, bins, self.num_filters))
            )
            in_channels = self.num_filters
        self._remaining_bins = bins
        self._fold_conv = conv(self.hidden_size, (_KERNEL_FRAMES, bins), (1, 1), "fold_conv")
        self._fold_conv.build((None, None, bins, self.num_filters))
        self._fold_norm = norm("fold_layer_norm", (None, None, self.hidden_size))
        self.built = True

    def call(self, features, nonpadding_mask=None):
        x = ops.cast(features, self.compute_dtype)
        if nonpadding_mask is None:
            nonpadding_mask = ops.ones(ops.shape(x)[:2], "float32")
        mask = nonpadding_mask
        for block_conv, norm in zip(self._block_convs, self._block_norms, strict=True):
            x = _mask_frames(x, mask)
            # 2 zeros on the right: ceil(frames / 2) outputs, the last of which
            # sees the same zeros whether they come from padding or from here.
            x = ops.pad(x, [[0, 0], [0, 2], [0, 0], [0, 0]])
            x = self._norm_relu(norm, block_conv(x))
            mask = mask[:, ::2]
        x = self._fold(_mask_frames(x, mask))
        x = self._norm_relu(self._fold_norm, x)
        # The norm's bias makes padded frames non-zero again.
        return _mask_frames(x, mask), mask

    def _fold(self, x):
        """The fold convolution `[batch, frames, bins, filters] -> [batch, frames, hidden]`.

        Output `t` sees frames `t .. t+2` (T2T pads 2 zero frames on the
        right) across every bin, so it is `sum_k x[t + k] @ W_k` with `x`'s
        bins and filters flattened. One matmul gives every frame's three
        products, `[batch, frames, 3, hidden]`, and shifted sums add them:
        the same sums as the convolution, in half its training time on CPU
        (oneDNN runs a kernel as wide as its input poorly; a matmul well).
        `_fold_conv` owns the kernel, so checkpoints keep their layout.
        """
        batch, frames = ops.shape(x)[0], ops.shape(x)[1]
        taps, bins, filters, hidden = self._fold_conv.kernel.shape
        # [taps, bins, filters, hidden] -> [bins * filters, taps * hidden]
        kernel = ops.reshape(
            ops.transpose(ops.cast(self._fold_conv.kernel, self.compute_dtype), [1, 2, 0, 3]),
            [bins * filters, taps * hidden],
        )
        products = ops.matmul(ops.reshape(x, [batch, frames, bins * filters]), kernel)
        products = ops.reshape(products, [batch, frames, taps, hidden])
        products = ops.pad(products, [[0, 0], [0, taps - 1], [0, 0], [0, 0]])
        return sum(products[:, k : k + frames, k] for k in range(taps))

    def _norm_relu(self, norm, x):
        return ops.relu(ops.cast(norm(ops.cast(x, "float32")), self.compute_dtype))

    @staticmethod
    def output_length(frames):
        """Output frames for `frames` input frames (int or tensor).

        Each stride-2 block keeps every second frame, so
        `ceil(ceil(frames / 2) / 2)`.
        """
        for _ in range(_NUM_STRIDED_BLOCKS):
            frames = (frames + 1) // 2
        return frames

    @staticmethod
    def input_frames_seen(output_index):
        """The first and last input frame that output frame `output_index` sees.

        The fold sees reduced frames `t .. t+2`, and each stride-2 block's
        output `t` sees its input's frames `2t .. 2t+2`: output `t` sees input
        frames `4t .. 4t+14` (int or tensor). Word times place an output
        frame at the middle of what it sees.
        """
        first, last = output_index, output_index + _KERNEL_FRAMES - 1
        for _ in range(_NUM_STRIDED_BLOCKS):
            first, last = 2 * first, 2 * last + _KERNEL_FRAMES - 1
        return first, last

    @staticmethod
    def frames_per_output():
        """`(reduction, first_middle)`: where output frames fall among input frames.

        `reduction` is the input frames between output frames (4), and
        `first_middle` the input frame at the middle of what output frame 0
        sees (7); output frame `t`'s middle is input frame
        `first_middle + reduction * t`.
        """
        first, last = SpeechFrontEnd.input_frames_seen(0)
        return SpeechFrontEnd.input_frames_seen(1)[0] - first, (first + last) // 2

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_filters=self.num_filters,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
