"""The trainer's metrics as Keras metrics.

They are per-window training statistics and T2T's teacher-forced evaluation
metrics.

They accumulate in float64 on the host, from values the training loop or an
evaluation batch has already summed, so a long window or evaluation adds
many numbers without float32 rounding. What the loop hands over
(`LoopTotals`) and what a window reports (`WindowStats`) are typed, as
Model Garden's task hands its metrics to the controller that logs them; the
evaluation's results stay keyed by T2T's metric names, the names
`eval_results.jsonl` and TensorBoard show.
"""

from __future__ import annotations

import dataclasses

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


@dataclasses.dataclass(frozen=True)
class LoopTotals:
    """One call of the training loop (`train_step.make_train_loop`), as numbers.

    Attributes:
        steps: steps run.
        loss: the sum of their losses (each a per-token mean).
        grad_norm: the last step's gradient norm.
        examples: examples trained.
        target_tokens: non-padding target tokens trained.
        audio_seconds: seconds of audio trained (None: text inputs).
        bad_step: the index of the first step whose loss was NaN/Inf, or -1.
    """

    steps: int
    loss: float
    grad_norm: float
    examples: float
    target_tokens: float
    audio_seconds: float | None = None
    bad_step: int = -1

    @classmethod
    def from_loop(cls, totals: dict) -> LoopTotals:
        """From the loop's dict of tensors (a `tf.function` returns a dict)."""
        audio = totals.get("audio_seconds")
        return cls(
            steps=int(totals["steps"]),
            loss=float(totals["loss"]),
            grad_norm=float(totals["grad_norm"]),
            examples=float(totals["examples"]),
            target_tokens=float(totals["target_tokens"]),
            audio_seconds=None if audio is None else float(audio),
            bad_step=int(totals["bad_step"]),
        )


@dataclasses.dataclass(frozen=True)
class WindowStats:
    """The training statistics of one progress window (rates per second).

    `summaries()` names them for TensorBoard; `progress(...)` is the log line.
    """

    loss: float
    learning_rate: float
    grad_norm: float
    steps_per_second: float
    examples_per_second: float
    target_tokens_per_second: float
    audio_seconds_per_second: float | None = None  # None: text inputs

    def summaries(self) -> dict[str, float]:
        """Each statistic under its own name (the ones there are)."""
        values = dataclasses.asdict(self)
        return {name: value for name, value in values.items() if value is not None}

    def progress(self, step: int, train_steps: int, remaining: str, dropped: int) -> str:
        """The trainer's progress line for `step` of `train_steps`.

        Args:
            step: the step reached.
            train_steps: the run's last step.
            remaining: the time left, formatted.
            dropped: long examples the input pipeline dropped so far.
        """
        throughput = (
            f"{self.audio_seconds_per_second:.1f} audio-s/s"
            if self.audio_seconds_per_second is not None
            else f"{self.target_tokens_per_second:.0f} tokens/s"
        )
        return (
            f"step {step}/{train_steps}: loss {self.loss:.4f}, lr {self.learning_rate:.3g}, "
            f"grad_norm {self.grad_norm:.3g}, {self.steps_per_second:.2f} steps/s, "
            f"{self.examples_per_second:.1f} examples/s, {throughput}, ETA {remaining}"
            + (f", {dropped} long examples dropped" if dropped else "")
        )


class TrainingWindow:
    """What the training loop ran since the last progress line.

    `update` takes each loop call's `LoopTotals`; `stats(seconds,
    learning_rate)` gives the window's `WindowStats`.

    Example:
    >>> window = TrainingWindow()
    >>> window.update(LoopTotals(steps=4, loss=8.0, grad_norm=0.5, examples=40.0,
    ...                          target_tokens=400.0))
    >>> stats = window.stats(seconds=2.0, learning_rate=0.1)
    >>> stats.loss, stats.steps_per_second, stats.target_tokens_per_second
    (2.0, 2.0, 200.0)
    """

    def __init__(self):
        self.loss = RatioOfSums("loss")  # mean loss per step
        self.steps = keras.metrics.Sum("steps", dtype="float64")
        self.examples = keras.metrics.Sum("examples", dtype="float64")
        self.target_tokens = keras.metrics.Sum("target_tokens", dtype="float64")
        self.audio_seconds = keras.metrics.Sum("audio_seconds", dtype="float64")
        self.grad_norm = 0.0  # the last step's, not a mean
        self.has_audio = False

    def reset(self) -> None:
        for metric in (
            self.loss,
            self.steps,
            self.examples,
            self.target_tokens,
            self.audio_seconds,
        ):
            metric.reset_state()
        self.grad_norm = 0.0
        self.has_audio = False

    @property
    def step_count(self) -> int:
        return int(self.steps.result())

    def update(self, totals: LoopTotals) -> None:
        """Adds one loop call's totals."""
        self.loss.update_state(totals.loss, totals.steps)
        self.steps.update_state(totals.steps)
        self.examples.update_state(totals.examples)
        self.target_tokens.update_state(totals.target_tokens)
        if totals.audio_seconds is not None:
            self.audio_seconds.update_state(totals.audio_seconds)
            self.has_audio = True
        self.grad_norm = totals.grad_norm

    def stats(self, seconds: float, learning_rate: float) -> WindowStats:
        """The window's statistics, per second of its `seconds` where a rate."""
        seconds = max(seconds, 1e-9)
        return WindowStats(
            loss=float(self.loss.result()),
            learning_rate=learning_rate,
            grad_norm=self.grad_norm,
            steps_per_second=max(self.step_count, 1) / seconds,
            examples_per_second=float(self.examples.result()) / seconds,
            target_tokens_per_second=float(self.target_tokens.result()) / seconds,
            audio_seconds_per_second=(
                float(self.audio_seconds.result()) / seconds if self.has_audio else None
            ),
        )


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
