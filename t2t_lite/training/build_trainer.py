"""Building a trainer's parts from hparams: the model, the optimizer and the `Trainer`.

This is the one place t2t-lite-trainer and the tests make the model, the
optimizer and the `Trainer` they are handed to.

Both are built inside `strategy.scope()`, and the optimizer's slots before
the first distributed step: under `tf.distribute` a Keras 3 optimizer must
create its variables in the scope, or the first step fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from t2t_lite.data.phoneme_targets import check_phoneme_targets
from t2t_lite.data.problem import Problem
from t2t_lite.data.word_boundary_targets import check_word_times
from t2t_lite.hparam import HParams
from t2t_lite.models.build_model import build_model
from t2t_lite.models.transformer_config import MODEL_HPARAM_DEFAULTS
from t2t_lite.training.learning_rate import T2TSchedule
from t2t_lite.training.optimizers import make_optimizer
from t2t_lite.training.train_step import STEP_HPARAM_DEFAULTS, StepSettings
from t2t_lite.training.trainer import EvalDecoder, Trainer, TrainerConfig

# Hparams added after runs were saved -> the value such a run trained with:
# filled in before a resume compares hparams (`run_dir.save_or_check_hparams`).
ADDED_HPARAM_DEFAULTS = {**MODEL_HPARAM_DEFAULTS, **STEP_HPARAM_DEFAULTS}


def build_optimizer(
    hparams: HParams, train_steps: int, model: keras.Model
) -> keras.optimizers.Optimizer:
    """The optimizer `hparams` name, on T2T's schedule, with its slots built.

    Its slots are built for `model`'s weights. Call it inside the strategy's
    scope.

    Args:
        hparams: the run's hparams (`optimizer`, the schedule's, and
            `activation_dtype`: float16 gets Keras's dynamic loss scaling).
        train_steps: the run's length (read by the `linear_decay` factor).
        model: the built model whose trainable weights it updates.

    Returns:
        A built Keras optimizer (a `LossScaleOptimizer` in float16).

    Example:
    >>> from t2t_lite import registry
    >>> hparams = registry.hparams("transformer_tiny")
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> build_optimizer(hparams, 100, model).built
    True
    """
    optimizer = make_optimizer(hparams, T2TSchedule.from_hparams(hparams, train_steps))
    if hparams.activation_dtype == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    optimizer.build(model.trainable_variables)
    return optimizer


def build_trainer(
    problem: Problem,
    hparams: HParams,
    model_name: str,
    config: TrainerConfig,
    strategy: tf.distribute.Strategy,
    make_eval_decoder: Callable[[Any], EvalDecoder] | None = None,
) -> Trainer:
    """A `Trainer` for the registered model `model_name` on `problem`.

    Args:
        problem: the problem trained on.
        hparams: the run's hparams.
        model_name: a registered model (`--model`).
        config: the trainer's flags.
        strategy: the `tf.distribute` strategy the model and optimizer are
            built under.
        make_eval_decoder: given the model, returns what decodes dev data at
            each evaluation (e.g. `decoding.evaluation.evaluator.DecodeEvaluator.factory`);
            called now, so that decode hparams the model cannot honour fail
            before training rather than at the first evaluation.

    Returns:
        The trainer, not yet restored from output_dir's checkpoints.

    Raises:
        ValueError: hparams that train a word boundary head on shards
            without word times (`check_word_times`), a phoneme CTC head
            without a lexicon (`check_phoneme_targets`), or a loss the model
            cannot train (`StepSettings.from_hparams`).

    Example:
    >>> trainer = build_trainer(problem, hparams, "transformer", config,
    ...                         tf.distribute.get_strategy())  # doctest: +SKIP
    >>> trainer.train(evaluate_every=1000)  # doctest: +SKIP
    """
    check_word_times(problem, hparams, config.data_dir)
    if phonemes := check_phoneme_targets(problem, hparams, config.data_dir):
        logging.info(phonemes)
    StepSettings.from_hparams(hparams)  # refuses losses the hparams cannot train, before any work
    with strategy.scope():
        model = build_model(problem, hparams, model_name, config.data_dir)
        optimizer = build_optimizer(hparams, config.train_steps, model)
    eval_decoder = make_eval_decoder(model) if make_eval_decoder else None
    return Trainer(model, optimizer, problem, hparams, config, strategy, eval_decoder=eval_decoder)
