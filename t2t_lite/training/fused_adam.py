"""Keras' Adam, updating each variable with TensorFlow's fused Adam kernel."""

import keras
from keras import ops


def _handle(variable):
    """The resource handle of a Keras variable or of a `tf.Variable`.

    Under a distribution strategy's update, it is the current device's
    component.
    """
    return (variable.value if isinstance(variable, keras.Variable) else variable).handle


@keras.saving.register_keras_serializable(package="t2t_lite")
class FusedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` whose TensorFlow update is one kernel per variable.

    Keras' Adam writes the update as about twelve element-wise passes over
    each variable (the two moments, the square, the square root, the
    division, three assignments). TensorFlow's `ResourceApplyAdam` computes
    the same update in one pass:

        m += (g - m) * (1 - beta_1)
        v += (g**2 - v) * (1 - beta_2)
        variable -= lr * sqrt(1 - beta_2**t) / (1 - beta_1**t) * m / (sqrt(v) + epsilon)

    with `t` the update count, as Keras counts it (`iterations + 1`): one
    kernel per variable instead of Keras' chain of small ops, which on two
    cores cost more than the arithmetic (docs/benchmarks.md). The
    slots (`momentums`, `velocities`), the config and checkpoints are Keras'
    Adam's, so either restores the other. With `amsgrad=True`, or on another
    backend, the update is Keras'. The kernel also runs under XLA and under a
    distribution strategy's per-device update.

    Args:
        **kwargs: those of `keras.optimizers.Adam` (`learning_rate`,
            `beta_1`, `beta_2`, `epsilon`, `gradient_accumulation_steps`, ...).

    Example:
    >>> import numpy as np
    >>> weight = keras.Variable(np.ones(3, "float32"))
    >>> optimizer = FusedAdam(learning_rate=0.1)
    >>> optimizer.apply([np.array([1.0, -1.0, 0.0], "float32")], [weight])
    >>> np.round(keras.ops.convert_to_numpy(weight), 3)
    array([0.9, 1.1, 1. ], dtype=float32)
    """

    def update_step(self, gradient, variable, learning_rate):
        if keras.backend.backend() != "tensorflow":
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        # An embedding's gradient may come as IndexedSlices, a row once per
        # lookup: Adam squares their sum (Keras' Adam squares each slice).
        gradient = tf.convert_to_tensor(gradient)
        if self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        step = ops.cast(self.iterations + 1, dtype)
        index = self._get_variable_index(variable)
        beta_1, beta_2 = ops.cast(self.beta_1, dtype), ops.cast(self.beta_2, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable),
            m=_handle(self._momentums[index]),
            v=_handle(self._velocities[index]),
            beta1_power=ops.power(beta_1, step),
            beta2_power=ops.power(beta_2, step),
            lr=ops.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=ops.cast(self.epsilon, dtype),
            grad=ops.cast(gradient, dtype),
        )
