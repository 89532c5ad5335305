"""T2T's layer_preprocess / layer_postprocess sequences as one layer."""

from collections.abc import Sequence

import keras
from keras import ops

from t2t_lite.layers._utils import make_dropout, validate_broadcast_dims, validate_rate
from t2t_lite.layers.layer_norm import LayerNorm

_STEPS = "adn"
_NORM_TYPES = ("layer", "rms", "none")


@keras.saving.register_keras_serializable(package="t2t_lite")
class LayerPrePostProcess(keras.layers.Layer):
    """Applies a T2T pre/post-processing sequence such as `"n"` or `"da"`.

    Each character is one step, applied left to right:
    `a` adds `previous` (the residual), `n` normalizes over the last axis,
    `d` applies dropout (training only). `"none"` or `""` is the identity.
    In T2T terms, `layer_preprocess(x)` is `LayerPrePostProcess("n")(x)` and
    `layer_postprocess(x, y)` is `LayerPrePostProcess("da")(y, previous=x)`.

    Norms are computed in float32 (then cast back to the compute dtype) so
    that they stay accurate under mixed precision.

    Args:
        sequence: the steps, made of the characters `a`, `d`, `n`.
        dropout: dropout rate of the `d` steps.
        norm_type: `"layer"` (LayerNormalization with scale and bias),
            `"rms"` (RMSNormalization with a scale) or `"none"` (identity).
        norm_epsilon: epsilon of the norm (T2T's default 1e-6).
        dropout_broadcast_dims: dimensions of `[batch, length, channels]`
            along which one dropout mask is shared (T2T's
            `layer_prepostprocess_dropout_broadcast_dims`).
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        x: `[batch, length, channels]` (any rank >= 2 when dropout broadcast
            dims are not used).
        previous: the residual for `a` steps, same shape as `x`.
        training: whether dropout is active.

    Returns:
        A tensor of the shape of `x`, in the layer's compute dtype.

    Example:
    >>> import numpy as np
    >>> post = LayerPrePostProcess("da", dropout=0.1)
    >>> x = np.ones((2, 3, 8), "float32")
    >>> post(x, previous=x, training=True).shape
    TensorShape([2, 3, 8])
    """

    def __init__(
        self,
        sequence: str,
        dropout: float = 0.0,
        norm_type: str = "layer",
        norm_epsilon: float = 1e-6,
        dropout_broadcast_dims: Sequence[int] = (),
        **kwargs,
    ):
        super().__init__(**kwargs)
        name = type(self).__name__
        if not isinstance(sequence, str):
            raise ValueError(f"{name}: sequence must be a string, got {sequence!r}.")
        if sequence != "none":
            bad = sorted(set(sequence) - set(_STEPS))
            if bad:
                raise ValueError(
                    f"{name}: sequence {sequence!r} has unknown step(s) "
                    f"{', '.join(map(repr, bad))}; use 'a' (residual), "
                    "'d' (dropout), 'n' (norm), or 'none'."
                )
        if norm_type not in _NORM_TYPES:
            raise ValueError(
                f"{name}: unknown norm_type {norm_type!r}; use one of "
                f"{', '.join(map(repr, _NORM_TYPES))}."
            )
        if norm_epsilon <= 0:
            raise ValueError(f"{name}: norm_epsilon must be > 0, got {norm_epsilon}.")
        self.sequence = sequence
        self.dropout = validate_rate(dropout, name)
        self.norm_type = norm_type
        self.norm_epsilon = float(norm_epsilon)
        self.dropout_broadcast_dims = validate_broadcast_dims(dropout_broadcast_dims, 3, name)
        self._steps = "" if sequence == "none" else sequence

    def build(self, input_shape):
        # One norm per `n` so that e.g. "nan" gets two independent scales.
        self._norms = []
        for _ in range(self._steps.count("n")):
            if self.norm_type == "none":
                continue
            if self.norm_type == "layer":
                norm = LayerNorm(
                    epsilon=self.norm_epsilon,
                    dtype="float32",
                    name=f"layer_norm_{len(self._norms)}",
                )
            else:
                norm = keras.layers.RMSNormalization(
                    epsilon=self.norm_epsilon,
                    dtype="float32",
                    name=f"rms_norm_{len(self._norms)}",
                )
            norm.build(input_shape)
            self._norms.append(norm)
        self._dropout_layer = make_dropout(
            self.dropout, self.dropout_broadcast_dims, 3, self.dtype_policy, "dropout"
        )
        self.built = True

    def call(self, x, previous=None, training=None):
        if "a" in self._steps and previous is None:
            raise ValueError(
                f"{type(self).__name__}: sequence {self.sequence!r} has an 'a' "
                "(residual) step but no `previous` tensor was given."
            )
        x = ops.cast(x, self.compute_dtype)
        norms = iter(self._norms)
        for step in self._steps:
            if step == "a":
                x = x + ops.cast(previous, x.dtype)
            elif step == "n":
                if self.norm_type != "none":
                    normalized = next(norms)(ops.cast(x, "float32"))
                    x = ops.cast(normalized, self.compute_dtype)
            elif self._dropout_layer is not None:
                x = self._dropout_layer(x, training=training)
        return x

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            sequence=self.sequence,
            dropout=self.dropout,
            norm_type=self.norm_type,
            norm_epsilon=self.norm_epsilon,
            dropout_broadcast_dims=list(self.dropout_broadcast_dims),
        )
        return config
