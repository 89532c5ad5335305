"""Which examples a run keeps, by length.

One rule serves the input pipeline and the report a run prints before its
first step.

The rule is T2T's: an example is dropped when its inputs are longer than
`max_input_seq_length`, its targets longer than `max_target_seq_length`, or
its batching length (`Problem.batching_length`: frames x mel bins for speech)
longer than `max_length`, the last only in training, in static-shape mode or
with `eval_drop_long_sequences`. A limit of 0 is off.

`length_checks` is that rule, applied to `checked_lengths`. The input
pipeline applies it to each example in the TF graph; `split_lengths_report`
applies it to the per-example lengths datagen records in each split's
manifest, so that a run says up front how
many examples and hours of each split it keeps and drops, rather than a
running "N long examples dropped" that never says what share of the corpus
that is. The trainer logs the report once and writes it to
`length_report.json` in its output_dir, beside `eval_results.jsonl`.

Example:
    >>> from t2t_lite import registry
    >>> limits = active_limits(registry.hparams("transformer_librispeech"), TRAIN, static=False)
    >>> limits
    {'max_input_seq_length': 3600, 'max_target_seq_length': 900, 'max_length': 288000}
    >>> lengths = {"inputs": 3700, "targets": 50, "batch": 3700 * 80}  # a 37 s utterance
    >>> [(reason, bool(within)) for reason, within in length_checks(lengths, limits)]
    [('max_input_seq_length', False), ('max_target_seq_length', True), ('max_length', False)]
    >>> report = run_lengths_report(problem, hparams, data_dir, static=False)  # doctest: +SKIP
    >>> print(describe(report))  # doctest: +SKIP
    example lengths, with limits max_input_seq_length=3,600, max_target_seq_length=900, ...:
      train: all 281,241 examples (961.1 h)
      dev: all 5,567 examples (10.7 h)
"""

from __future__ import annotations

import dataclasses

import numpy as np

from t2t_lite.data.problem import EVAL, TRAIN, Problem
from t2t_lite.hparam import HParams

# Checked in this order; an example counts against the first limit it exceeds.
DROP_REASONS = ("max_input_seq_length", "max_target_seq_length", "max_length")
_LENGTH_CHECKED = {
    "max_input_seq_length": "inputs",
    "max_target_seq_length": "targets",
    "max_length": "batch",
}
REPORT_FILE = "length_report.json"


def active_limits(hparams: HParams, mode: str, static: bool) -> dict[str, int]:
    """`{reason: limit}` of the length limits that apply to `mode`, in check order."""
    drops_batch_length = mode == TRAIN or hparams.eval_drop_long_sequences or static
    limits = {
        "max_input_seq_length": hparams.max_input_seq_length,
        "max_target_seq_length": hparams.max_target_seq_length,
        "max_length": (hparams.max_length or hparams.batch_size) if drops_batch_length else 0,
    }
    return {reason: limit for reason, limit in limits.items() if limit > 0}


def checked_lengths(problem: Problem, model_lengths: dict, hparams: HParams) -> dict:
    """The lengths the rule checks: the sequence lengths plus the batching length.

    Args:
        problem: the problem whose `batching_length` applies.
        model_lengths: "inputs" (if any) and "targets", from
            `Problem.model_lengths` (one example's scalar tensors) or
            `Problem.model_lengths_of_stored` (arrays over a split).
        hparams: the run's hparams.

    Returns:
        `model_lengths` with "batch" added, for `length_checks`.
    """
    return {**model_lengths, "batch": problem.batching_length(model_lengths, hparams)}


def length_checks(lengths: dict, limits: dict[str, int]) -> list[tuple[str, object]]:
    """`[(reason, within_limit)]` for each limit that applies to `lengths`.

    Args:
        lengths: "inputs" (absent for a language model), "targets" and
            "batch" lengths (`checked_lengths`): one example's scalar
            tensors, or arrays of many.
        limits: from `active_limits`.

    Returns:
        Each limit's reason with a boolean (tensor or array) that is true
        where the length is within it, in check order.
    """
    return [
        (reason, lengths[_LENGTH_CHECKED[reason]] <= limit)
        for reason, limit in limits.items()
        if _LENGTH_CHECKED[reason] in lengths
    ]


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:,.1f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


@dataclasses.dataclass
class SplitLengths:
    """What a run keeps of one split; seconds are None for text problems."""

    split: str
    examples: int
    kept: int
    dropped: dict[str, int]  # reason -> examples, first reason only
    seconds: float | None = None
    kept_seconds: float | None = None

    @property
    def dropped_examples(self) -> int:
        return self.examples - self.kept

    def describe(self) -> str:
        hours = lambda s: f" ({_duration(s)})" if s is not None else ""  # noqa: E731
        if not self.dropped_examples:
            return f"{self.split}: all {self.examples:,} examples{hours(self.seconds)}"
        dropped_seconds = None if self.seconds is None else self.seconds - self.kept_seconds
        reasons = ", ".join(f"{count:,} over {reason}" for reason, count in self.dropped.items())
        return (
            f"{self.split}: kept {self.kept:,} of {self.examples:,} examples"
            f"{hours(self.kept_seconds)}, DROPPED {self.dropped_examples:,}"
            f"{hours(dropped_seconds)}: {reasons}"
        )


def split_lengths_report(
    problem: Problem, hparams: HParams, data_dir: str, split: str, static: bool
) -> SplitLengths | None:
    """Applies the length rule to every example of `split` datagen recorded.

    Returns:
        The split's counts, or None when its manifest records no lengths
        (data written before datagen recorded them).
    """
    stored_lengths = problem.manifest_lengths(data_dir, split)
    if stored_lengths is None:
        return None
    model_lengths = problem.model_lengths_of_stored(stored_lengths, hparams)
    lengths = {
        name: np.asarray(value)
        for name, value in checked_lengths(problem, model_lengths, hparams).items()
    }
    examples = len(stored_lengths["targets"])
    kept = np.ones([examples], bool)
    dropped = {}
    for reason, within in length_checks(lengths, active_limits(hparams, split, static)):
        newly_dropped = kept & ~np.asarray(within)
        if newly_dropped.any():
            dropped[reason] = int(newly_dropped.sum())
        kept &= ~newly_dropped
    seconds = problem.stored_seconds(stored_lengths)
    return SplitLengths(
        split=split,
        examples=examples,
        kept=int(kept.sum()),
        dropped=dropped,
        seconds=None if seconds is None else float(np.sum(seconds)),
        kept_seconds=None if seconds is None else float(np.sum(seconds[kept])),
    )


def run_lengths_report(
    problem: Problem,
    hparams: HParams,
    data_dir: str,
    static: bool,
    splits: tuple[str, ...] = (TRAIN, EVAL),
) -> dict:
    """The report a run writes: its limits, and per split what it keeps.

    A split whose lengths were not recorded is listed under "unrecorded".
    """
    report = {"limits": active_limits(hparams, TRAIN, static), "splits": {}, "unrecorded": []}
    for split in splits:
        split_report = split_lengths_report(problem, hparams, data_dir, split, static)
        if split_report is None:
            report["unrecorded"].append(split)
        else:
            report["splits"][split] = dataclasses.asdict(split_report)
    return report


def describe(report: dict) -> str:
    """The report as the few lines a run logs before its first step."""
    limits = ", ".join(f"{name}={value:,}" for name, value in report["limits"].items())
    lines = [f"example lengths, with limits {limits or 'none'}:"]
    for values in report["splits"].values():
        lines.append("  " + SplitLengths(**values).describe())
    for split in report["unrecorded"]:
        lines.append(
            f"  {split}: lengths not recorded (data from before datagen recorded them; "
            "t2t-lite-datagen --overwrite records them); drops are counted as training goes"
        )
    return "\n".join(lines)
