"""The trainer's metrics as Keras metrics: per-window training statistics and
T2T's teacher-forced evaluation metrics.

They accumulate in float64 on the host, from values the training loop or an
evaluation batch has already summed, so a long window or evaluation adds
many numbers without float32 rounding.
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from t2t_lite.training.losses import summed_cross_entropy


class RatioOfSums(keras.metrics.Metric):
    """`sum(numerators) / max(sum(denominators), 1)` over every update.

    A per-token or per-sequence mean over batches of different sizes: each
    batch gives its summed value and its count.

    Args:
        name: the metric's name.
        dtype: of the sums (float64, so that many updates keep their digits).

    Example:
    >>> accuracy = RatioOfSums("accuracy")
    >>> accuracy.update_state(3.0, 4.0)
    >>> accuracy.update_state(5.0, 6.0)
    >>> float(accuracy.result())
    0.8
    """

    def __init__(self, name: str, dtype: str = "float64"):
        super().__init__(name=name, dtype=dtype)
        self.numerator = self.add_variable((), "zeros", dtype=self.dtype, name="numerator")
        self.denominator = self.add_variable((), "zeros", dtype=self.dtype, name="denominator")

    def update_state(self, numerator, denominator) -> None:
        self.numerator.assign_add(ops.cast(numerator, self.dtype))
        self.denominator.assign_add(ops.cast(denominator, self.dtype))

    def result(self):
        return self.numerator / ops.maximum(self.denominator, 1.0)


class TrainingWindow:
    """What the training loop ran since the last progress line.

    `update` takes each loop call's totals (`train_step.make_train_loop`);
    `values(seconds, learning_rate)` gives the logged statistics, under the
    names TensorBoard and the log show.

    Example:
    >>> window = TrainingWindow()
    >>> window.update({"steps": 4, "loss": 8.0, "grad_norm": 0.5, "examples": 40.0,
    ...                "target_tokens": 400.0, "bad_step": -1})
    >>> values = window.values(seconds=2.0, learning_rate=0.1)
    >>> values["loss"], values["steps_per_second"], values["target_tokens_per_second"]
    (2.0, 2.0, 200.0)
    """

    # The summed statistics, besides the loss (a mean per step).
    SUMMED = ("examples", "target_tokens", "audio_seconds")

    def __init__(self):
        self.loss = RatioOfSums("loss")  # mean loss per step
        self.steps = keras.metrics.Sum("steps", dtype="float64")
        self.sums = {name: keras.metrics.Sum(name, dtype="float64") for name in self.SUMMED}
        self.grad_norm = 0.0  # the last step's, not a mean
        self.has_audio = False

    def reset(self) -> None:
        for metric in (self.loss, self.steps, *self.sums.values()):
            metric.reset_state()
        self.grad_norm = 0.0
        self.has_audio = False

    @property
    def step_count(self) -> int:
        return int(self.steps.result())

    def update(self, totals: dict) -> None:
        """Adds one loop call's totals (numbers: `steps`, sums, the last `grad_norm`)."""
        self.loss.update_state(totals["loss"], totals["steps"])
        self.steps.update_state(totals["steps"])
        for name in self.SUMMED:
            if name in totals:
                self.sums[name].update_state(totals[name])
        self.has_audio = self.has_audio or "audio_seconds" in totals
        self.grad_norm = float(totals["grad_norm"])

    def values(self, seconds: float, learning_rate: float) -> dict[str, float]:
        """The window's statistics, per second of its `seconds` where a rate."""
        seconds = max(seconds, 1e-9)
        values = {
            "loss": float(self.loss.result()),
            "learning_rate": learning_rate,
            "grad_norm": self.grad_norm,
            "steps_per_second": max(self.step_count, 1) / seconds,
            "examples_per_second": float(self.sums["examples"].result()) / seconds,
            "target_tokens_per_second": float(self.sums["target_tokens"].result()) / seconds,
        }
        if self.has_audio:
            values["audio_seconds_per_second"] = (
                float(self.sums["audio_seconds"].result()) / seconds
            )
        return values


def teacher_forced_sums(model: keras.Model, label_smoothing: float):
    """A `tf.function` giving one dev batch's sums under teacher forcing.

    Args:
        model: the model evaluated (called with `training=False`).
        label_smoothing: of the reported `loss` (`neg_log_perplexity` is unsmoothed).

    Returns:
        `sums(features)` -> float32 `loss`, `neg_log_perplexity`, `tokens`,
        `correct` (target tokens predicted), `sequences` and
        `sequences_correct` (every token right), for `TeacherForcedMetrics`.
    """

    @tf.function(reduce_retracing=True)
    def sums(features):
        targets = tf.cast(features["targets"], tf.int32)
        logits = model(features, training=False)
        smoothed, tokens = summed_cross_entropy(logits, targets, label_smoothing)
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

    return sums


class TeacherForcedMetrics:
    """T2T's evaluation metrics over dev batches, fed by teacher forcing.

    `update` takes one batch's sums (`teacher_forced_sums`: `loss`,
    `neg_log_perplexity`, `tokens`, `correct`, `sequences`,
    `sequences_correct`); `results()` gives the
    per-token loss, accuracy and negative log-perplexity and the per-sequence
    accuracy.

    Example:
    >>> metrics = TeacherForcedMetrics()
    >>> metrics.update({"loss": 6.0, "neg_log_perplexity": -5.0, "tokens": 10.0,
    ...                 "correct": 8.0, "sequences": 2.0, "sequences_correct": 1.0})
    >>> metrics.results()
    {'loss': 0.6, 'accuracy': 0.8, 'accuracy_per_sequence': 0.5, 'neg_log_perplexity': -0.5}
    """

    def __init__(self):
        self.metrics = {
            "loss": RatioOfSums("loss"),
            "accuracy": RatioOfSums("accuracy"),
            "accuracy_per_sequence": RatioOfSums("accuracy_per_sequence"),
            "neg_log_perplexity": RatioOfSums("neg_log_perplexity"),
        }

    def reset(self) -> None:
        for metric in self.metrics.values():
            metric.reset_state()

    def update(self, sums: dict) -> None:
        tokens = sums["tokens"]
        self.metrics["loss"].update_state(sums["loss"], tokens)
        self.metrics["accuracy"].update_state(sums["correct"], tokens)
        self.metrics["accuracy_per_sequence"].update_state(
            sums["sequences_correct"], sums["sequences"]
        )
        self.metrics["neg_log_perplexity"].update_state(sums["neg_log_perplexity"], tokens)

    def results(self) -> dict[str, float]:
        return {name: float(metric.result()) for name, metric in self.metrics.items()}
