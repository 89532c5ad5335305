"""Scores of decoded text against references, with the field's reference scorers.

WER and CER come from jiwer, BLEU from sacrebleu (never hand-rolled);
sequence accuracy is the fraction of exact matches.
"""

from __future__ import annotations

from collections.abc import Sequence

DECODE_METRICS = ("wer", "cer", "bleu", "sequence_accuracy")


def decode_metrics(problem) -> list[str]:
    """The metrics decoding a problem's data reports.

    Its `eval_metrics` that score text (WER, CER, BLEU), then sequence
    accuracy, always (exact matches).
    """
    metrics = [m for m in problem.eval_metrics if m in DECODE_METRICS and m != "sequence_accuracy"]
    return metrics + ["sequence_accuracy"]


def score(metrics: Sequence[str], hypotheses: Sequence[str], references: Sequence[str]) -> dict:
    """`{metric: value}` for each requested metric (WER/CER as fractions, BLEU 0-100)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references.")
    if not references:
        raise ValueError("nothing to score: no references.")
    results = {}
    for metric in metrics:
        if metric in ("wer", "cer"):
            import jiwer

            measure = jiwer.wer if metric == "wer" else jiwer.cer
            results[metric] = float(measure(list(references), list(hypotheses)))
        elif metric == "bleu":
            import sacrebleu

            results[metric] = float(
                sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score
            )
        elif metric == "sequence_accuracy":
            matches = sum(h == r for h, r in zip(hypotheses, references, strict=True))
            results[metric] = matches / len(references)
        else:
            raise ValueError(f"unknown decode metric {metric!r}; use one of {DECODE_METRICS}.")
    return results
