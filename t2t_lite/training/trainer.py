"""The trainer: trains the model it is handed, checkpoints it, evaluates it.

    trainer = Trainer(model, optimizer, problem, hparams, config, strategy,
                      eval_decoder=evaluator)  # optional
    trainer.train(evaluate_every=1000)

`training.build_trainer.build_trainer` makes the model and the optimizer from
hparams under the strategy and hands them over (Model Garden's trainer is
handed its model, optimizer and task the same way). Training runs
`iterations_per_loop` steps per `tf.function` call (T2T's TPU habit, good
everywhere). Checkpoints (model, optimizer state, step) are written every
`save_checkpoints_steps` and at the end, and a rerun in the same
`output_dir` resumes from the latest. A NaN/Inf loss stops the run with its
step number before anything is saved, so the last checkpoint is the last
good one. Evaluation reports T2T's teacher-forced metrics and, when the
trainer is handed an eval decoder (e.g. one made by
`decoding.evaluation.evaluator.DecodeEvaluator.factory`), the metrics of real
decoding of a dev subset. The trainer itself imports nothing of decoding.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from t2t_lite import run_dir
from t2t_lite.data import pipeline
from t2t_lite.data.problem import EVAL, TRAIN, Problem
from t2t_lite.hparam import HParams
from t2t_lite.models.checkpointable import model_weights
from t2t_lite.training import strategy as strategies
from t2t_lite.training.loop_schedule import LoopSchedule
from t2t_lite.training.metrics import (
    LoopTotals,
    TeacherForcedMetrics,
    TrainingWindow,
    teacher_forced_sums,
)
from t2t_lite.training.optimizers import batch_counter, scheduled_learning_rate
from t2t_lite.training.train_step import StepSettings, make_replica_step, make_train_loop

# What decodes dev data at each evaluation: a dataset in, metrics by name out.
EvalDecoder = Callable[[tf.data.Dataset], dict]


class TrainingError(RuntimeError):
    """Training cannot go on (a non-finite loss); the message says what was kept."""


class WarmStartError(ValueError):
    """`warm_start_from` names no checkpoint, or one whose weights do not fit."""


@dataclasses.dataclass
class TrainerConfig:
    """The trainer's flags (T2T's names)."""

    output_dir: str
    data_dir: str
    train_steps: int = 1000
    eval_steps: int = 20
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int | None = 5  # None: keep all (the CLI's 0, T2T's)
    iterations_per_loop: int = 100
    log_step_count_steps: int = 100
    xla_compile: bool = False
    static_shapes: bool = False
    random_seed: int | None = None
    # T2T's --warm_start_from: a checkpoint (prefix or directory) whose model
    # weights start a new run; its optimizer state and step are not taken.
    warm_start_from: str | None = None


_WEIGHTS_PREFIX = "model/weights_by_path/"  # where `model_weights` puts them in a checkpoint
_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def _unescape(name: str) -> str:
    """A checkpoint key's object name as written: TF escapes "/" as ".S" and "." as ".."."""
    out, index = [], 0
    while index < len(name):
        if name[index] == "." and index + 1 < len(name):
            out.append("/" if name[index + 1] == "S" else name[index + 1])
            index += 2
        else:
            out.append(name[index])
            index += 1
    return "".join(out)


def warm_start(model: keras.Model, checkpoint: str) -> str:
    """Sets every weight of `model` from `checkpoint`; returns the file read.

    Reads the weights by their model-relative paths (`model_weights`), so a
    run of another problem warm-starts this one when the model and its
    sizes are the same; the optimizer's state and the step stay behind.
    Every weight is checked before any is set.

    Args:
        model: the built model.
        checkpoint: a checkpoint prefix, or a directory (its latest checkpoint).

    Raises:
        WarmStartError: no checkpoint there, or it lacks a weight of the model
            or holds one of another shape (the message names what to do).
    """
    source = checkpoint
    if tf.io.gfile.isdir(checkpoint):
        source = tf.train.latest_checkpoint(checkpoint)
    try:
        reader = tf.train.load_checkpoint(source) if source else None
    except (ValueError, tf.errors.OpError):
        reader = None
    if reader is None:
        raise WarmStartError(
            f"--warm_start_from {checkpoint} holds no checkpoint; pass a run's output "
            "directory or a checkpoint prefix."
        )
    keys = {
        _unescape(key[len(_WEIGHTS_PREFIX) : -len(_VALUE_SUFFIX)]): key
        for key in reader.get_variable_to_shape_map()
        if key.startswith(_WEIGHTS_PREFIX) and key.endswith(_VALUE_SUFFIX)
    }
    shapes = reader.get_variable_to_shape_map()
    weights = model_weights(model).weights_by_path
    misfits = [
        f"{path} {tuple(weight.shape)} is "
        + (str(tuple(shapes[keys[path]])) if path in keys else "missing")
        for path, weight in weights.items()
        if path not in keys or tuple(shapes[keys[path]]) != tuple(weight.shape)
    ]
    if misfits:
        raise WarmStartError(
            f"--warm_start_from {checkpoint}: its weights do not fit this model "
            f"({len(misfits)} of {len(weights)}, e.g. {misfits[0]} there); warm-start from "
            "a run of the same model and sizes."
        )
    for path, weight in weights.items():
        weight.assign(reader.get_tensor(keys[path]))
    return source


def _format_duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class Trainer:
    """Trains `model` with `optimizer` on `problem` under `strategy`.

    Args:
        model: the built model (every variable created), e.g. by
            `models.build_model.build_model` inside `strategy.scope()`.
        optimizer: its built optimizer (slots created inside the same scope).
        problem: the problem whose data it trains and evaluates on.
        hparams: the run's hparams (the pipeline's and the step's settings).
        config: the trainer's flags.
        strategy: the `tf.distribute` strategy the two were built under.
        eval_decoder: decodes a dev dataset at each evaluation and returns
            its metrics; None: teacher-forced metrics only.

    Example:
    >>> trainer = Trainer(model, optimizer, problem, hparams, config,
    ...                   tf.distribute.get_strategy())  # doctest: +SKIP
    >>> trainer.train()  # doctest: +SKIP
    """

    def __init__(
        self,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        problem: Problem,
        hparams: HParams,
        config: TrainerConfig,
        strategy: tf.distribute.Strategy,
        eval_decoder: EvalDecoder | None = None,
    ):
        if not optimizer.built:
            raise ValueError(
                "build the optimizer inside strategy.scope() before handing it to the "
                "Trainer (training.build_trainer.build_optimizer does)."
            )
        self.model = model
        self.optimizer = optimizer
        self.problem = problem
        self.hparams = hparams
        self.config = config
        self.strategy = strategy
        self.chief = strategies.is_chief(strategy)
        self.drop_counter = pipeline.DropCounter()
        # Batches trained (T2T's global step), also under a name readers find.
        self._batches = batch_counter(optimizer)
        self.checkpoint = tf.train.Checkpoint(
            model=model_weights(model), optimizer=optimizer, step=self._batches
        )
        task_id = getattr(getattr(strategy, "cluster_resolver", None), "task_id", 0) or 0
        self._checkpoint_dir = run_dir.checkpoint_dir(config.output_dir, self.chief, task_id)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, self._checkpoint_dir, max_to_keep=config.keep_checkpoint_max
        )
        self._eval_decoder = eval_decoder
        self._summary_writers = {}
        self._train_loop = None
        self._window = TrainingWindow()
        self._eval_metrics = TeacherForcedMetrics()
        self._batch_sums = None  # traced at the first evaluation

    # -- data --------------------------------------------------------------------

    def _dataset(self, mode: str, repeat: bool | None = None, input_context=None):
        seed = self.config.random_seed
        return pipeline.make_dataset(
            self.problem,
            mode,
            self.config.data_dir,
            self.hparams,
            input_context=input_context,
            static_shapes=self.config.static_shapes,
            repeat=repeat,
            seed=seed,
            drop_counter=self.drop_counter,
        )

    # -- checkpoints ---------------------------------------------------------------

    @property
    def step(self) -> int:
        return int(self._batches.numpy())

    def restore(self) -> int:
        """Restores the latest checkpoint of output_dir, if any; returns the step.

        A run with no checkpoint yet starts from `config.warm_start_from`'s
        model weights when it names one (a resumed run has its own).
        """
        latest = tf.train.latest_checkpoint(self.config.output_dir)
        if latest:
            self.checkpoint.restore(latest).assert_consumed()
            logging.info("resumed from %s at step %d", latest, self.step)
        elif self.config.warm_start_from:
            source = warm_start(self.model, self.config.warm_start_from)
            logging.info("warm-started the model's weights from %s; step 0", source)
        return self.step

    def save(self) -> None:
        self.manager.save(checkpoint_number=self.step)
        if not self.chief:  # the save was only for the collective reads
            shutil.rmtree(self._checkpoint_dir, ignore_errors=True)

    # -- summaries -------------------------------------------------------------------

    def _summaries(self, name: str, values: dict, step: int) -> None:
        if not self.chief:
            return
        if name not in self._summary_writers:
            directory = (
                self.config.output_dir
                if name == "train"
                else os.path.join(self.config.output_dir, name)
            )
            self._summary_writers[name] = tf.summary.create_file_writer(directory)
        with self._summary_writers[name].as_default(step=step):
            for key, value in values.items():
                tf.summary.scalar(key, value)

    # -- training --------------------------------------------------------------------

    def train(self, evaluate_every: int = 0) -> dict:
        """Trains to `train_steps` (evaluating every `evaluate_every` steps if > 0).

        Returns:
            The last evaluation's results ({} when none ran).

        Raises:
            TrainingError: the loss became NaN or Inf.
        """
        config = self.config
        self.restore()
        if self.step >= config.train_steps:
            logging.info("already at step %d >= train_steps %d", self.step, config.train_steps)
            return {}
        if self._train_loop is None:
            replica_step = make_replica_step(
                self.model, self.optimizer, StepSettings.from_hparams(self.hparams)
            )
            self._train_loop = make_train_loop(self.strategy, replica_step, config.xla_compile)
        dataset = self.strategy.distribute_datasets_from_function(
            lambda context: self._dataset(TRAIN, input_context=context)
        )
        iterator = iter(dataset)
        schedule = LoopSchedule.starting_at(
            self.step,
            train_steps=config.train_steps,
            iterations_per_loop=config.iterations_per_loop,
            log_every=config.log_step_count_steps,
            save_every=config.save_checkpoints_steps,
            evaluate_every=evaluate_every,
        )
        self._window.reset()
        self._window_start = time.time()

        def train_steps(steps: int) -> int:
            self._window.update(self._run_loop(iterator, steps))
            return self.step

        return schedule.run(
            self.step, train_steps, log=self._log_window, save=self.save, evaluate=self.evaluate
        )

    def _run_loop(self, iterator, steps: int) -> LoopTotals:
        """Runs `steps` training steps; returns their totals.

        Raises:
            TrainingError: a step's loss was NaN or Inf (nothing is saved).
        """
        start_step = self.step
        totals = LoopTotals.from_loop(self._train_loop(iterator, tf.constant(steps)))
        if totals.bad_step >= 0:
            bad = start_step + totals.bad_step + 1
            kept = self.manager.latest_checkpoint or "none yet"
            raise TrainingError(
                f"the loss became {totals.loss} at step {bad}; training stopped. "
                f"The last good checkpoint is kept: {kept}."
            )
        return totals

    def _log_window(self) -> None:
        """Logs the steps since the last progress line, then starts a new window."""
        seconds = time.time() - self._window_start
        stats = self._window.stats(seconds, scheduled_learning_rate(self.optimizer))
        remaining = (self.config.train_steps - self.step) / stats.steps_per_second
        line = stats.progress(
            self.step,
            self.config.train_steps,
            _format_duration(remaining),
            self.drop_counter.total(),
        )
        logging.info("%s", line)
        self._summaries("train", stats.summaries(), self.step)
        self._window.reset()
        self._window_start = time.time()

    # -- evaluation -----------------------------------------------------------------

    def evaluate(self) -> dict:
        """Teacher-forced metrics on `eval_steps` dev batches plus decoding metrics."""
        if not self.chief:
            return {}
        results = {"step": self.step, **self._teacher_forced_metrics()}
        results.update(self._decode_metrics())
        logging.info(
            "eval at step %d: %s",
            self.step,
            ", ".join(f"{k} {v:.4f}" for k, v in sorted(results.items()) if k != "step"),
        )
        self._summaries("eval", {k: v for k, v in results.items() if k != "step"}, self.step)
        run_dir.append_eval_results(self.config.output_dir, results)
        return results

    def _teacher_forced_metrics(self) -> dict:
        if self._batch_sums is None:
            self._batch_sums = teacher_forced_sums(self.model, self.hparams.label_smoothing)
        self._eval_metrics.reset()
        for features in self._dataset(EVAL, repeat=False).take(self.config.eval_steps):
            self._eval_metrics.update(self._batch_sums(features))
        return self._eval_metrics.results()

    def _decode_metrics(self) -> dict:
        if self._eval_decoder is None:
            return {}
        return self._eval_decoder(self._dataset(EVAL, repeat=False))

    def weights_checksum(self) -> float:
        """A float64 sum over every model weight (compares replicas and workers)."""
        return float(sum(np.sum(w.numpy(), dtype=np.float64) for w in self.model.weights))
