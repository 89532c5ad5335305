"""Optimizers from core Keras, configured by T2T's hparam names.

They are Adam with a fused update, and T2T's Adafactor.
"""

from __future__ import annotations

import keras

from t2t_lite.hparam import HParams
from t2t_lite.training.adafactor import Adafactor
from t2t_lite.training.fused_adam import FusedAdam

# What each optimizer reads besides the learning rate.
OPTIMIZER_HPARAMS = {
    "adam": ("optimizer_adam_beta1", "optimizer_adam_beta2", "optimizer_adam_epsilon"),
    "adamw": (
        "optimizer_adam_beta1",
        "optimizer_adam_beta2",
        "optimizer_adam_epsilon",
        "weight_decay",
    ),
    "lamb": ("optimizer_adam_beta1", "optimizer_adam_beta2", "optimizer_adam_epsilon"),
    "adafactor": (
        "optimizer_adafactor_beta1",
        "optimizer_adafactor_beta2",
        "optimizer_adafactor_decay_type",
        "optimizer_adafactor_memory_exponent",
        "optimizer_adafactor_clipping_threshold",
        "optimizer_adafactor_multiply_by_parameter_scale",
        "optimizer_adafactor_factored",
    ),
    "sgd": (),
    "momentum": ("optimizer_momentum_momentum", "optimizer_momentum_nesterov"),
}


def optimizer_name(hparams: HParams) -> str:
    """The lower-cased optimizer name (T2T writes "Adafactor" in its TPU sets)."""
    name = hparams.optimizer.lower()
    if name not in OPTIMIZER_HPARAMS:
        raise ValueError(
            f"hparam 'optimizer' is {hparams.optimizer!r}; use one of "
            f"{', '.join(OPTIMIZER_HPARAMS)}."
        )
    return name


def batch_counter(optimizer: keras.optimizers.Optimizer):
    """The variable counting every batch the optimizer was applied to.

    That is T2T's global step, which `train_steps`, checkpoints and logs
    count. Keras's public `iterations` counts updates instead: with gradient
    accumulation it is `floor(batches / accumulate_steps)`, a tensor rather
    than a variable. Keras 3 keeps the batch count in the optimizer's
    `_iterations` variable (inside a `LossScaleOptimizer`, its inner
    optimizer's) and calls the learning-rate schedule with it
    (`T2TSchedule` divides by the accumulation, as T2T did).
    """
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    return inner._iterations


def scheduled_learning_rate(optimizer: keras.optimizers.Optimizer) -> float:
    """The learning-rate schedule's value at the optimizer's batch count.

    It is the value Keras applies and the trainer logs. Keras 3 keeps the
    schedule in `_learning_rate` and has no public getter for it (its
    `learning_rate` property evaluates it at the batch count). A learning rate
    that is not a schedule is read through that property.
    """
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    schedule = inner._learning_rate
    if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
        return float(schedule(batch_counter(optimizer)))
    return float(optimizer.learning_rate)


def make_optimizer(hparams: HParams, learning_rate) -> keras.optimizers.Optimizer:
    """The optimizer `hparams.optimizer` names, with T2T's settings.

    Gradient accumulation (`optimizer_multistep_accumulate_steps`) uses
    Keras's `gradient_accumulation_steps`. Gradient clipping is done by the
    trainer on the all-reduced gradient (T2T clips the global gradient).
    """
    name = optimizer_name(hparams)
    accumulate = hparams.optimizer_multistep_accumulate_steps
    common = {"gradient_accumulation_steps": accumulate if accumulate > 1 else None}
    if name in ("adam", "adamw", "lamb"):
        betas = dict(
            beta_1=hparams.optimizer_adam_beta1,
            beta_2=hparams.optimizer_adam_beta2,
            epsilon=hparams.optimizer_adam_epsilon,
        )
        if name == "adam":
            return FusedAdam(learning_rate, **betas, **common)
        if name == "adamw":
            # Decoupled decay here replaces T2T's L2 loss term (see trainer).
            return keras.optimizers.AdamW(
                learning_rate, weight_decay=hparams.weight_decay, **betas, **common
            )
        return keras.optimizers.Lamb(learning_rate, **betas, **common)
    if name == "adafactor":
        # T2T's own Adafactor (training/adafactor.py), not Keras's, which
        # turns a variable into NaN when its gradient has a zero row and a
        # zero column. The schedule's value is its learning rate, as in T2T.
        return Adafactor(
            learning_rate,
            beta1=hparams.optimizer_adafactor_beta1,
            decay_type=hparams.optimizer_adafactor_decay_type,
            memory_exponent=hparams.optimizer_adafactor_memory_exponent,
            beta2=hparams.optimizer_adafactor_beta2,
            clipping_threshold=hparams.optimizer_adafactor_clipping_threshold,
            multiply_by_parameter_scale=hparams.optimizer_adafactor_multiply_by_parameter_scale,
            factored=hparams.optimizer_adafactor_factored,
            **common,
        )
    if name == "momentum":
        return keras.optimizers.SGD(
            learning_rate,
            momentum=hparams.optimizer_momentum_momentum,
            nesterov=hparams.optimizer_momentum_nesterov,
            **common,
        )
    return keras.optimizers.SGD(learning_rate, **common)
