"""The trainer's Keras metrics give exactly the float64 means of the sums they
replace (the values the log, TensorBoard and eval_results.jsonl show)."""

import numpy as np

from t2t_lite.training.metrics import (
    LoopTotals,
    RatioOfSums,
    TeacherForcedMetrics,
    TrainingWindow,
    WindowStats,
)


def _float32s(rng, count, scale):
    return [np.float32(x) for x in rng.uniform(0, scale, count)]


def test_ratio_of_sums_with_no_updates_is_zero():
    assert float(RatioOfSums("loss").result()) == 0.0


def test_training_window_is_the_plain_sums_over_steps_and_seconds():
    rng = np.random.default_rng(0)
    window = TrainingWindow()
    losses, examples, tokens = (_float32s(rng, 7, s) for s in (40.0, 900.0, 9000.0))
    steps = [5, 5, 3, 5, 5, 5, 2]
    for i in range(7):
        window.update(
            LoopTotals.from_loop(
                {
                    "steps": np.int32(steps[i]),
                    "loss": losses[i],
                    "grad_norm": np.float32(i),
                    "examples": examples[i],
                    "target_tokens": tokens[i],
                    "bad_step": np.int32(-1),
                }
            )
        )
    stats = window.stats(seconds=3.7, learning_rate=0.25)
    assert stats == WindowStats(
        loss=sum(float(x) for x in losses) / sum(steps),
        learning_rate=0.25,
        grad_norm=6.0,
        steps_per_second=sum(steps) / 3.7,
        examples_per_second=sum(float(x) for x in examples) / 3.7,
        target_tokens_per_second=sum(float(x) for x in tokens) / 3.7,
    )
    assert "audio_seconds_per_second" not in stats.summaries()
    assert stats.progress(35, 100, "1m00s", 0).endswith("tokens/s, ETA 1m00s")
    window.update(LoopTotals(steps=1, loss=2.0, grad_norm=1.0, examples=1.0,
                             target_tokens=3.0, audio_seconds=9.0))  # fmt: skip
    stats = window.stats(1.0, 0.25)
    assert stats.summaries()["audio_seconds_per_second"] == 9.0
    line = stats.progress(36, 100, "59s", 4)
    assert " 9.0 audio-s/s, ETA 59s, 4 long examples dropped" in line
    window.reset()
    assert window.stats(1.0, 0.25).loss == 0.0 and window.step_count == 0


def test_teacher_forced_metrics_are_per_token_and_per_sequence_ratios():
    rng = np.random.default_rng(1)
    metrics = TeacherForcedMetrics()
    names = ("loss", "neg_log_perplexity", "tokens", "correct", "sequences", "sequences_correct")
    batches = [dict(zip(names, _float32s(rng, 6, 500.0), strict=True)) for _ in range(9)]
    for batch in batches:
        metrics.update(batch)
    sums = {name: sum(float(b[name]) for b in batches) for name in names}
    assert metrics.results() == {
        "loss": sums["loss"] / sums["tokens"],
        "accuracy": sums["correct"] / sums["tokens"],
        "accuracy_per_sequence": sums["sequences_correct"] / sums["sequences"],
        "neg_log_perplexity": sums["neg_log_perplexity"] / sums["tokens"],
    }
