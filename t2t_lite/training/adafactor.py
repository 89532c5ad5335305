"""Tensor2Tensor's Adafactor (Shazeer & Stern, 2018) as a Keras 3 optimizer.

Keras's own `keras.optimizers.Adafactor` forms the factored second moment as
one product `v = r * c / mean(r)`; where a gradient row and a gradient column
are both zero that product underflows to 0 (epsilon 1e-30, squared) and the
update divides 0 by 0, so one step turns the whole variable into NaN. Broadcast
dropout (T2T's TPU sets) zeroes whole channels for a whole batch and makes
that happen on the first step. T2T's update (tensor2tensor/utils/adafactor.py),
implemented here, never forms `v`: it scales the gradient by the row factor
and by the column factor separately, each an `rsqrt` of a moment that is at
least `epsilon1`.

One step, for a variable `w` with gradient `g` (all in float32):

    t       = updates done before this one (T2T's global step)
    decay   = 1 - (t + 1) ** -memory_exponent        (decay_type "pow")
            = beta2 * (1 - beta2 ** t) / (1 - beta2 ** (t + 1))   ("adam")
    g2      = g ** 2 + epsilon1
    rank >= 2 and factored (over the last two dims):
        vr  = decay * vr + (1 - decay) * mean(g2, axis=-1)
        vc  = decay * vc + (1 - decay) * mean(g2, axis=-2)
        x   = g * rsqrt(vr / mean(vr, -1))[..., :, None] * rsqrt(vc)[..., None, :]
    else:
        v   = decay * v + (1 - decay) * g2
        x   = g * rsqrt(v)
    x      /= max(1, rms(x) / clipping_threshold)         (if clipping_threshold)
    step    = learning_rate * max(rms(w), epsilon2)       (multiply_by_parameter_scale)
            = learning_rate                               (otherwise)
    m       = beta1 * m + (1 - beta1) * step * x          (if beta1)
    w      -= m  (or step * x)

The learning rate is whatever the trainer's schedule gives (T2T passed its
`learning_rate_schedule` value as Adafactor's `learning_rate`; with
`multiply_by_parameter_scale` it is the relative step size). The row factor
is computed as `rsqrt(vr) * sqrt(mean(vr))`, the same value as T2T's
`rsqrt(vr / mean(vr))` without the ratio that could underflow (and become
0, then `rsqrt` inf) when one row's moment is 1e-30 and the mean is large.
T2T's "HACK" (adding `1e-30 * mean(g2)` to steer XLA's fusion on TPU) is
left out: it changes no value.

State (`vr`/`vc` or `v`, and `m` with `beta1`) is float32 whatever the
variable's dtype; float16/bfloat16 variables are read into float32, updated
there and cast back. State variables are created with `add_variable`, so they
are mirrored under `tf.distribute` (the trainer builds the optimizer inside
`strategy.scope()`) and checkpointed like any Keras optimizer's slots.
"""

from __future__ import annotations

import contextlib

import keras
from keras import ops

DECAY_TYPES = ("pow", "adam")


def _rms(x):
    return ops.sqrt(ops.mean(ops.square(x)))


@keras.saving.register_keras_serializable(package="t2t_lite")
class Adafactor(keras.optimizers.Optimizer):
    """T2T's Adafactor.

    Args:
        learning_rate: a float, a `LearningRateSchedule` or a callable (Keras's
            usual `learning_rate`); the relative step size when
            `multiply_by_parameter_scale`, else the absolute one.
        beta1: first-moment (momentum) decay; 0 keeps no first moment.
        decay_type: "pow" (`1 - (t + 1) ** -memory_exponent`) or "adam"
            (Adam's `beta2` with its bias correction folded in).
        memory_exponent: the exponent of the "pow" schedule.
        beta2: the decay of the "adam" schedule.
        clipping_threshold: update clipping by RMS; None or 0 turns it off.
        multiply_by_parameter_scale: scale the step by `max(rms(w), epsilon2)`.
        factored: factor the second moment of variables of rank >= 2 over
            their last two dims.
        epsilon1: added to the squared gradient.
        epsilon2: the smallest parameter scale.
        **kwargs: `keras.optimizers.Optimizer` arguments (`name`,
            `gradient_accumulation_steps`, ...).
    """

    def __init__(
        self,
        learning_rate=0.01,
        beta1=0.0,
        decay_type="pow",
        memory_exponent=0.8,
        beta2=0.999,
        clipping_threshold=1.0,
        multiply_by_parameter_scale=True,
        factored=True,
        epsilon1=1e-30,
        epsilon2=1e-3,
        name="adafactor",
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        decay_type = str(decay_type).lower()
        if decay_type not in DECAY_TYPES:
            raise ValueError(f"Adafactor decay_type must be 'pow' or 'Adam', got {decay_type!r}.")
        if not 0.0 <= beta1 < 1.0:
            raise ValueError(f"Adafactor beta1 must be in [0, 1), got {beta1}.")
        if decay_type == "adam" and not 0.0 < beta2 < 1.0:
            raise ValueError(f"Adafactor beta2 must be in (0, 1), got {beta2}.")
        if clipping_threshold is not None and clipping_threshold < 0:
            raise ValueError(
                f"Adafactor clipping_threshold must be >= 0 (0: off), got {clipping_threshold}."
            )
        self.beta1 = float(beta1)
        self.decay_type = decay_type
        self.memory_exponent = float(memory_exponent)
        self.beta2 = float(beta2)
        self.clipping_threshold = float(clipping_threshold) if clipping_threshold else None
        self.multiply_by_parameter_scale = bool(multiply_by_parameter_scale)
        self.factored = bool(factored)
        self.epsilon1 = float(epsilon1)
        self.epsilon2 = float(epsilon2)

    # -- state -------------------------------------------------------------------------

    def _is_factored(self, variable) -> bool:
        return self.factored and len(variable.shape) >= 2

    def _slot(self, variable, shape, suffix):
        """A float32 zero slot of `shape`, placed with `variable` under tf.distribute."""
        name = f"{variable.path.replace('/', '_')}_{suffix}"
        strategy = getattr(self, "_distribution_strategy", None)  # TF backend only
        placement = contextlib.nullcontext()
        if strategy is not None:
            reference = variable.value if isinstance(variable, keras.Variable) else variable
            placement = strategy.extended.colocate_vars_with(reference)
        with placement:
            return self.add_variable(shape=tuple(shape), dtype="float32", name=name)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        row_moments, column_moments, moments, momentums = [], [], [], []
        for variable in var_list:
            if self._overwrite_variable_with_gradient(variable):
                row_moments.append(None)
                column_moments.append(None)
                moments.append(None)
                momentums.append(None)
                continue
            shape = tuple(variable.shape)
            if self._is_factored(variable):
                row_moments.append(self._slot(variable, shape[:-1], "vr"))
                column_moments.append(self._slot(variable, shape[:-2] + shape[-1:], "vc"))
                moments.append(None)
            else:
                row_moments.append(None)
                column_moments.append(None)
                moments.append(self._slot(variable, shape, "v"))
            momentums.append(self._slot(variable, shape, "m") if self.beta1 else None)
        self._row_moments = row_moments
        self._column_moments = column_moments
        self._moments = moments
        self._momentums = momentums

    # -- the update -----------------------------------------------------------------------

    def _decay_rate(self):
        """T2T's decay rate at the update about to be made (`t` updates done)."""
        t = ops.cast(self.iterations, "float32")
        if self.decay_type == "pow":
            return 1.0 - ops.power(t + 1.0, -self.memory_exponent)
        beta2 = self.beta2
        return beta2 * (1.0 - ops.power(beta2, t)) / (1.0 - ops.power(beta2, t + 1.0))

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        grad = ops.cast(gradient, "float32")
        old = ops.cast(variable, "float32")
        grad_squared = ops.square(grad) + self.epsilon1
        decay = self._decay_rate()
        mixing = 1.0 - decay

        if self._is_factored(variable):
            vr, vc = self._row_moments[index], self._column_moments[index]
            new_vr = decay * vr + mixing * ops.mean(grad_squared, axis=-1)
            new_vc = decay * vc + mixing * ops.mean(grad_squared, axis=-2)
            self.assign(vr, new_vr)
            self.assign(vc, new_vc)
            row_factor = ops.rsqrt(new_vr) * ops.sqrt(ops.mean(new_vr, axis=-1, keepdims=True))
            column_factor = ops.rsqrt(new_vc)
            x = grad * ops.expand_dims(row_factor, -1)
            x = x * ops.expand_dims(column_factor, -2)
        else:
            v = self._moments[index]
            new_v = decay * v + mixing * grad_squared
            self.assign(v, new_v)
            x = grad * ops.rsqrt(new_v)

        if self.clipping_threshold:
            x = x / ops.maximum(1.0, _rms(x) / self.clipping_threshold)

        step_size = ops.cast(learning_rate, "float32")
        if self.multiply_by_parameter_scale:
            step_size = step_size * ops.maximum(_rms(old), self.epsilon2)
        subtrahend = step_size * x
        if self.beta1:
            m = self._momentums[index]
            subtrahend = self.beta1 * m + (1.0 - self.beta1) * subtrahend
            self.assign(m, subtrahend)
        self.assign(variable, ops.cast(old - subtrahend, variable.dtype))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "beta1": self.beta1,
                "decay_type": self.decay_type,
                "memory_exponent": self.memory_exponent,
                "beta2": self.beta2,
                "clipping_threshold": self.clipping_threshold,
                "multiply_by_parameter_scale": self.multiply_by_parameter_scale,
                "factored": self.factored,
                "epsilon1": self.epsilon1,
                "epsilon2": self.epsilon2,
            }
        )
        return config
