"""T2T's learning-rate schedules: a product of named factors.

`"constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"` multiplies
`learning_rate_constant`, `min(1, step / warmup)`,
`rsqrt(max(step, warmup))` and `hidden_size ** -0.5`, with T2T's
definitions of each factor (`utils/learning_rate.py`). `step` is T2T's
global step divided by `optimizer_multistep_accumulate_steps` (as a float,
as T2T divided it): Keras 3 calls the schedule with the batch count (its
`_iterations`, not the update count `iterations`), so the schedule divides.
"""

from __future__ import annotations

import math

import keras
import tensorflow as tf

from t2t_lite.hparam import HParams

# The hparams the factors read, by factor.
FACTOR_HPARAMS = {
    "constant": ("learning_rate_constant",),
    "linear_warmup": ("learning_rate_warmup_steps",),
    "linear_decay": ("learning_rate_decay_steps",),
    "cosdecay": ("learning_rate_warmup_steps", "learning_rate_decay_steps"),
    "rsqrt_decay": ("learning_rate_warmup_steps",),
    "rsqrt_normalized_decay": ("learning_rate_warmup_steps",),
    "exp_decay": (
        "learning_rate_warmup_steps",
        "learning_rate_decay_steps",
        "learning_rate_decay_rate",
    ),
    "rsqrt_hidden_size": ("hidden_size",),
}
ACCUMULATE = "optimizer_multistep_accumulate_steps"
SCHEDULE_HPARAMS = (
    "learning_rate_schedule",
    ACCUMULATE,
    *sorted({name for names in FACTOR_HPARAMS.values() for name in names}),
)


def parse_schedule(schedule: str) -> list[str]:
    names = [name.strip() for name in schedule.split("*") if name.strip()]
    for name in names:
        if name not in FACTOR_HPARAMS:
            hint = (
                " (T2T's legacy schedule reads learning_rate; t2t-lite does not have it)"
                if name == "legacy"
                else ""
            )
            raise ValueError(
                f"unknown learning rate factor {name!r} in learning_rate_schedule{hint}; "
                f"use a product of {', '.join(FACTOR_HPARAMS)}."
            )
    return names


@keras.saving.register_keras_serializable(package="t2t_lite")
class T2TSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """The learning rate after a number of batches, from T2T's schedule string.

    Args:
        schedule: factor names joined by `*`.
        values: the hparams the factors read (see `from_hparams`).
        train_steps: the run's length (read by `linear_decay`).

    Example:
    >>> from t2t_lite import registry
    >>> schedule = T2TSchedule.from_hparams(registry.hparams("transformer_base"))
    >>> float(schedule(8000))  # 2.0 * 1 * 8000 ** -0.5 * 512 ** -0.5
    0.000988...
    """

    def __init__(self, schedule: str, values: dict, train_steps: int = 0):
        self.schedule = schedule
        self.names = parse_schedule(schedule)
        self.values = dict(values)
        self.train_steps = train_steps

    @classmethod
    def from_hparams(cls, hparams: HParams, train_steps: int = 0) -> T2TSchedule:
        names = parse_schedule(hparams.learning_rate_schedule)
        needed = {n for name in names for n in FACTOR_HPARAMS[name]}
        values = {name: hparams.get(name) for name in sorted(needed)}
        values[ACCUMULATE] = hparams.get(ACCUMULATE, 0)
        return cls(hparams.learning_rate_schedule, values, train_steps)

    def _factor(self, name: str, step: tf.Tensor) -> tf.Tensor:
        v = self.values
        if name == "constant":
            return tf.constant(v["learning_rate_constant"], tf.float32)
        if name == "linear_warmup":
            return tf.minimum(1.0, step / float(v["learning_rate_warmup_steps"]))
        if name == "linear_decay":
            remaining = (self.train_steps - step) / float(v["learning_rate_decay_steps"])
            return tf.minimum(1.0, tf.maximum(0.0, remaining))
        if name == "cosdecay":
            in_warmup = tf.cast(step <= v["learning_rate_warmup_steps"], tf.float32)
            decayed = 0.5 * (1 + tf.cos(math.pi * step / v["learning_rate_decay_steps"]))
            return in_warmup + (1 - in_warmup) * decayed
        if name == "rsqrt_decay":
            return tf.math.rsqrt(tf.maximum(step, float(v["learning_rate_warmup_steps"])))
        if name == "rsqrt_normalized_decay":
            warmup = float(v["learning_rate_warmup_steps"])
            return math.sqrt(warmup) * tf.math.rsqrt(tf.maximum(step, warmup))
        if name == "exp_decay":
            progress = (step - v["learning_rate_warmup_steps"]) / v["learning_rate_decay_steps"]
            return tf.pow(float(v["learning_rate_decay_rate"]), tf.maximum(progress, 0.0))
        return tf.constant(v["hidden_size"] ** -0.5, tf.float32)  # rsqrt_hidden_size

    def __call__(self, batches):
        # T2T's `_global_step`: batches per update divided out.
        step = tf.cast(batches, tf.float32) / float(max(self.values.get(ACCUMULATE) or 1, 1))
        rate = tf.constant(1.0, tf.float32)
        for name in self.names:
            rate *= self._factor(name, step)
        return rate

    def get_config(self):
        return {"schedule": self.schedule, "values": self.values, "train_steps": self.train_steps}
