"""The trainer: builds model and optimizer under a strategy, trains, checkpoints, evaluates.

    trainer = Trainer(problem, hparams, "transformer", config, strategy,
                      make_eval_decoder=DecodeEvaluator.factory(...))  # optional
    trainer.train(evaluate_every=1000)

Training runs `iterations_per_loop` steps per `tf.function` call (T2T's TPU
habit, good everywhere). Checkpoints (model, optimizer state, step) are
written every `save_checkpoints_steps` and at the end, and a rerun in the
same `output_dir` resumes from the latest. A NaN/Inf loss stops the run
with its step number before anything is saved, so the last checkpoint is
the last good one. Before the first step the run logs what its length
limits keep of each split (`length_policy`). Evaluation reports T2T's
teacher-forced metrics and, when the trainer is handed an eval decoder
(`make_eval_decoder`, e.g. `decoding.evaluation.DecodeEvaluator.factory`),
the metrics of real decoding of a dev subset. The trainer itself imports nothing of decoding.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf
from absl import logging

from t2t_lite import ALLOCATOR_ENV, run_dir
from t2t_lite.data import length_policy, pipeline
from t2t_lite.data.problem import EVAL, TRAIN, Problem
from t2t_lite.hparam import HParams
from t2t_lite.models.build import build_model
from t2t_lite.models.checkpointable import model_weights
from t2t_lite.training import cpu_features
from t2t_lite.training import strategy as strategies
from t2t_lite.training.learning_rate import T2TSchedule
from t2t_lite.training.losses import summed_cross_entropy
from t2t_lite.training.optimizers import batch_counter, make_optimizer, optimizer_name
from t2t_lite.training.train_step import StepSettings, make_replica_step, make_train_loop


class TrainingError(RuntimeError):
    """Training cannot go on (a non-finite loss); the message says what was kept."""


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


def _format_duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class Trainer:
    """Trains `model_name` on `problem` with `hparams` under `strategy`."""

    def __init__(
        self,
        problem: Problem,
        hparams: HParams,
        model_name: str,
        config: TrainerConfig,
        strategy: tf.distribute.Strategy,
        make_eval_decoder: Callable[[Any], Callable[[tf.data.Dataset], dict]] | None = None,
    ):
        self.problem = problem
        self.hparams = hparams
        self.config = config
        self.strategy = strategy
        self.chief = strategies.is_chief(strategy)
        self.drop_counter = pipeline.DropCounter()
        with strategy.scope():
            self.model = build_model(problem, hparams, model_name, config.data_dir)
            self.schedule = T2TSchedule.from_hparams(hparams, config.train_steps)
            self.optimizer = make_optimizer(hparams, self.schedule)
            if hparams.activation_dtype == "float16":
                import keras

                self.optimizer = keras.optimizers.LossScaleOptimizer(self.optimizer)
            # Slots must exist before the first distributed step.
            self.optimizer.build(self.model.trainable_variables)
            # Batches trained (T2T's global step), also under a name readers find.
            self._batches = batch_counter(self.optimizer)
            self.checkpoint = tf.train.Checkpoint(
                model=model_weights(self.model),
                optimizer=self.optimizer,
                step=self._batches,
            )
        task_id = getattr(getattr(strategy, "cluster_resolver", None), "task_id", 0) or 0
        self._checkpoint_dir = run_dir.checkpoint_dir(config.output_dir, self.chief, task_id)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, self._checkpoint_dir, max_to_keep=config.keep_checkpoint_max
        )
        self._summary_writers = {}
        self._train_loop = None
        # Built now, so that decode hparams the model cannot honour fail
        # before training rather than at the first evaluation.
        self._eval_decoder = make_eval_decoder(self.model) if make_eval_decoder else None

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
        """Restores the latest checkpoint of output_dir, if any; returns the step."""
        latest = tf.train.latest_checkpoint(self.config.output_dir)
        if latest:
            self.checkpoint.restore(latest).assert_consumed()
            logging.info("resumed from %s at step %d", latest, self.step)
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

    def _settings(self) -> StepSettings:
        hparams = self.hparams
        decoupled = optimizer_name(hparams) == "adamw"
        return StepSettings(
            label_smoothing=hparams.label_smoothing,
            clip_grad_norm=hparams.clip_grad_norm,
            l2_weight_decay=0.0 if decoupled else hparams.weight_decay,
            frame_seconds=hparams.get("audio_frame_step", 10.0) / 1000.0,
            ctc_loss_weight=hparams.ctc_loss_weight,
        )

    def train(self, evaluate_every: int = 0) -> dict:
        """Trains to `train_steps` (evaluating every `evaluate_every` steps if > 0)."""
        config = self.config
        self.restore()
        if self.step >= config.train_steps:
            logging.info("already at step %d >= train_steps %d", self.step, config.train_steps)
            return {}
        if self._train_loop is None:
            replica_step = make_replica_step(self.model, self.optimizer, self._settings())
            self._train_loop = make_train_loop(self.strategy, replica_step, config.xla_compile)
        if config.static_shapes:
            logging.info("%s", pipeline.static_shapes_summary(self.problem, self.hparams))
        logging.info(
            "precision: activations %s, variables %s (hparam activation_dtype=%s)",
            self.model.compute_dtype,
            self.model.variable_dtype,
            self.hparams.activation_dtype,
        )
        warning = cpu_features.bfloat16_warning(
            self.hparams.activation_dtype,
            strategies.runs_on_cpu(self.strategy),
            cpu_features.cpu_flags(),
        )
        if warning:
            logging.warning("%s", warning)
        logging.info("CPU allocator: %s=%s", ALLOCATOR_ENV, os.environ.get(ALLOCATOR_ENV))
        if self.chief:
            self.report_lengths()
        dataset = self.strategy.distribute_datasets_from_function(
            lambda context: self._dataset(TRAIN, input_context=context)
        )
        iterator = iter(dataset)
        last_log, last_save, last_eval = self.step, self.step, self.step
        window = {"start": time.time(), "steps": 0, "stats": {}}
        eval_results = {}
        while self.step < config.train_steps:
            events = [
                config.train_steps,
                last_save + config.save_checkpoints_steps,
                last_log + config.log_step_count_steps,
            ]
            if evaluate_every:
                events.append(last_eval + evaluate_every)
            steps = max(1, min(config.iterations_per_loop, min(events) - self.step))
            start_step = self.step
            totals = self._train_loop(iterator, tf.constant(steps))
            totals = {k: v.numpy() for k, v in totals.items()}
            if totals["bad_step"] >= 0:
                bad = start_step + int(totals["bad_step"]) + 1
                kept = self.manager.latest_checkpoint or "none yet"
                raise TrainingError(
                    f"the loss became {totals['loss']} at step {bad}; training stopped. "
                    f"The last good checkpoint is kept: {kept}."
                )
            window["steps"] += int(totals["steps"])
            for key, value in totals.items():
                if key not in ("steps", "bad_step", "grad_norm"):
                    window["stats"][key] = window["stats"].get(key, 0.0) + float(value)
            window["grad_norm"] = float(totals["grad_norm"])
            if (
                self.step - last_log >= config.log_step_count_steps
                or self.step >= config.train_steps
            ):
                self._log_window(window)
                window = {"start": time.time(), "steps": 0, "stats": {}}
                last_log = self.step
            if self.step - last_save >= config.save_checkpoints_steps:
                self.save()
                last_save = self.step
            if evaluate_every and self.step - last_eval >= evaluate_every:
                eval_results = self.evaluate()
                last_eval = self.step
        if last_save != self.step:
            self.save()
        if evaluate_every and last_eval != self.step:
            eval_results = self.evaluate()
        return eval_results

    def report_lengths(self) -> dict:
        """Logs what the length limits keep of each split, and writes it to
        `length_report.json` in output_dir (beside the eval results)."""
        report = length_policy.run_lengths_report(
            self.problem, self.hparams, self.config.data_dir, self.config.static_shapes
        )
        logging.info("%s", length_policy.describe(report))
        run_dir.write_atomically(
            os.path.join(self.config.output_dir, length_policy.REPORT_FILE),
            json.dumps(report, indent=2) + "\n",
        )
        return report

    def _log_window(self, window: dict) -> None:
        steps = max(window["steps"], 1)
        seconds = max(time.time() - window["start"], 1e-9)
        stats = window["stats"]
        learning_rate = float(self.schedule(self.optimizer.iterations))
        values = {
            "loss": stats.get("loss", 0.0) / steps,
            "learning_rate": learning_rate,
            "grad_norm": window.get("grad_norm", 0.0),
            "steps_per_second": steps / seconds,
            "examples_per_second": stats.get("examples", 0.0) / seconds,
            "target_tokens_per_second": stats.get("target_tokens", 0.0) / seconds,
        }
        if "audio_seconds" in stats:
            values["audio_seconds_per_second"] = stats["audio_seconds"] / seconds
        remaining = (self.config.train_steps - self.step) / values["steps_per_second"]
        throughput = (
            f"{values['audio_seconds_per_second']:.1f} audio-s/s"
            if "audio_seconds_per_second" in values
            else f"{values['target_tokens_per_second']:.0f} tokens/s"
        )
        dropped = self.drop_counter.total()
        logging.info(
            "step %d/%d: loss %.4f, lr %.3g, grad_norm %.3g, %.2f steps/s, %.1f examples/s, "
            "%s, ETA %s%s",
            self.step,
            self.config.train_steps,
            values["loss"],
            learning_rate,
            values["grad_norm"],
            values["steps_per_second"],
            values["examples_per_second"],
            throughput,
            _format_duration(remaining),
            f", {dropped} long examples dropped" if dropped else "",
        )
        self._summaries("train", values, self.step)

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
        model, smoothing = self.model, self.hparams.label_smoothing

        @tf.function(reduce_retracing=True)
        def batch_sums(features):
            targets = tf.cast(features["targets"], tf.int32)
            logits = model(features, training=False)
            smoothed, tokens = summed_cross_entropy(logits, targets, smoothing)
            plain, _ = summed_cross_entropy(logits, targets, 0.0)
            weights = tf.cast(targets != 0, tf.float32)
            correct = tf.cast(tf.argmax(logits, -1, output_type=tf.int32) == targets, tf.float32)
            sequence_ok = tf.reduce_all((correct * weights) == weights, axis=1)
            return {
                "loss": smoothed,
                "neg_log_perplexity": -plain,
                "tokens": tokens,
                "correct": tf.reduce_sum(correct * weights),
                "sequences": tf.cast(tf.shape(targets)[0], tf.float32),
                "sequences_correct": tf.reduce_sum(tf.cast(sequence_ok, tf.float32)),
            }

        sums = {}
        for features in self._dataset(EVAL, repeat=False).take(self.config.eval_steps):
            for key, value in batch_sums(features).items():
                sums[key] = sums.get(key, 0.0) + float(value)
        tokens = max(sums.get("tokens", 0.0), 1.0)
        return {
            "loss": sums.get("loss", 0.0) / tokens,
            "accuracy": sums.get("correct", 0.0) / tokens,
            "accuracy_per_sequence": sums.get("sequences_correct", 0.0)
            / max(sums.get("sequences", 0.0), 1.0),
            "neg_log_perplexity": sums.get("neg_log_perplexity", 0.0) / tokens,
        }

    def _decode_metrics(self) -> dict:
        if self._eval_decoder is None:
            return {}
        return self._eval_decoder(self._dataset(EVAL, repeat=False))

    def weights_checksum(self) -> float:
        """A float64 sum over every model weight (compares replicas and workers)."""
        return float(sum(np.sum(w.numpy(), dtype=np.float64) for w in self.model.weights))
