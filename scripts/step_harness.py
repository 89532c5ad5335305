"""The trainer's training step on synthetic batches, for the measuring scripts
(`xla_compile_times.py`, `batch_memory.py`): no flags, so both can import it."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_lite.models.build_model import build_model
from t2t_lite.training.learning_rate import T2TSchedule
from t2t_lite.training.optimizers import make_optimizer
from t2t_lite.training.train_step import StepSettings, make_replica_step


def synthetic_batch(problem, hparams, shape: dict) -> dict:
    """A batch of `shape` (from `static_batch_shapes`), full of real-looking values."""
    spec = problem.batch_spec(hparams)
    rng = np.random.default_rng(0)
    batch = {}
    for name, s in spec.items():
        dims = shape.get(name) or [shape["targets"][0]] + [None] * (s.shape.rank - 1)
        dims = [d if d is not None else k for d, k in zip(dims, s.shape.as_list(), strict=True)]
        if s.dtype.is_floating:
            batch[name] = tf.constant(rng.normal(size=dims), s.dtype)
        elif name == "inputs_length":
            batch[name] = tf.fill(dims, shape["inputs"][1])
        else:
            batch[name] = tf.constant(rng.integers(2, 200, size=dims), s.dtype)
    return batch


def training_step(problem, hparams, jit_compile: bool):
    """The trainer's replica step (model, optimizer, loss) for `hparams`, as a tf.function."""
    model = build_model(problem, hparams)
    optimizer = make_optimizer(hparams, T2TSchedule.from_hparams(hparams))
    optimizer.build(model.trainable_variables)
    settings = StepSettings(
        label_smoothing=hparams.label_smoothing,
        clip_grad_norm=hparams.clip_grad_norm,
        l2_weight_decay=0.0,
        frame_seconds=0.01,
        ctc_loss_weight=hparams.ctc_loss_weight,
    )
    return tf.function(make_replica_step(model, optimizer, settings), jit_compile=jit_compile)
