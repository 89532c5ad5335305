"""T2T's `layer_norm`, with its gradient written out."""

import keras
from keras import ops


def _normalize(x, epsilon: float):
    """`(x - mean) / sqrt(variance + epsilon)` over the last axis, with a closed-form gradient.

    The gradient is `r * (g - mean(g) - x_hat * mean(g * x_hat))`.

    Autodiff of the forward pass differentiates the mean and the variance
    separately and broadcasts each back to full size; the closed form needs
    three passes over full-size tensors instead of about ten (measured:
    docs/design.md, "Formulations chosen for oneDNN").
    """

    @ops.custom_gradient
    def normalize(x):
        mean = ops.mean(x, axis=-1, keepdims=True)
        centered = x - mean
        variance = ops.mean(ops.square(centered), axis=-1, keepdims=True)
        inverse_std = ops.rsqrt(variance + epsilon)
        normalized = centered * inverse_std

        def grad(*args, upstream=None):
            if upstream is None:  # the TF backend passes it positionally
                (upstream,) = args
            mean_upstream = ops.mean(upstream, axis=-1, keepdims=True)
            projection = ops.mean(upstream * normalized, axis=-1, keepdims=True)
            return inverse_std * (upstream - mean_upstream - normalized * projection)

        return normalized, grad

    return normalize(x)


@keras.saving.register_keras_serializable(package="t2t_lite")
class LayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` as T2T's `layer_norm`, with a hand-written gradient.

    The weights (`gamma`, `beta`), the config and the numbers are those of
    `keras.layers.LayerNormalization`; over the last axis the normalization
    runs in at least float32 as `(x - mean) * rsqrt(variance + epsilon) *
    gamma + beta` (T2T's order of operations), and its gradient is the closed
    form rather than autodiff of the mean and variance. Any other axis, or
    `rms_scaling`, falls back to the Keras layer.

    Args:
        **kwargs: those of `keras.layers.LayerNormalization` (`epsilon`,
            `dtype`, `name`, ...); T2T's epsilon is 1e-6.

    Returns:
        A tensor of the input's shape, in the layer's compute dtype.

    Example:
    >>> import numpy as np
    >>> norm = LayerNorm(epsilon=1e-6)
    >>> out = norm(np.arange(6, dtype="float32").reshape(2, 3))
    >>> np.round(keras.ops.convert_to_numpy(out), 3)
    array([[-1.225,  0.   ,  1.225],
           [-1.225,  0.   ,  1.225]], dtype=float32)
    """

    def call(self, inputs):
        last_axis = (-1, len(inputs.shape) - 1)
        if self.rms_scaling or len(self.axis) != 1 or self.axis[0] not in last_axis:
            return super().call(inputs)
        dtype = keras.backend.result_type(inputs.dtype, "float32")
        outputs = _normalize(ops.cast(inputs, dtype), self.epsilon)
        if self.gamma is not None:
            outputs = outputs * ops.cast(self.gamma, dtype)
        if self.beta is not None:
            outputs = outputs + ops.cast(self.beta, dtype)
        return ops.cast(outputs, self.compute_dtype)
