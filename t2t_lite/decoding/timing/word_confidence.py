"""Word confidences that mean what they say: calibrated on a split with references.

`WordTimer`'s raw confidence, the geometric mean of a word's CTC posteriors
over its frames, ranks words well (a wrong word scores lower) but is not a
probability: CTC posteriors spread over the frames around a token, so words
at a middling raw confidence are mostly right (docs/design.md,
"Calibrated word confidences"). Calibration raises it to a power fitted on a split with references,
`confidence ** exponent` (a one-parameter Platt scaling in log space: it
keeps the ranking, so a threshold chosen on raw confidences keeps its
words), and the exponent is stored beside the checkpoint it was fitted for
(`CALIBRATION_FILE`), where the decoder and the exporter read it (decode
hparam `word_confidence_exponent`, unless given, `with_run_calibration`).
`scripts/calibrate_word_confidence.py` fits and writes it.

A word is right when it is in a block where the hypothesis and the reference
agree (`difflib`'s matching blocks over the words, as `word_time_accuracy`
pairs them).
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Sequence

import numpy as np

from t2t_lite import run_dir
from t2t_lite.decoding.decode_config import RUN_CALIBRATION, DecodeConfig

CALIBRATION_FILE = "word_confidence.json"
# The exponents tried when fitting, log-spaced: 1 is no calibration.
_EXPONENTS = np.exp(np.linspace(np.log(0.005), np.log(5.0), 400))
_EPSILON = 1e-6  # keeps log(0) out of the likelihood


def matched_words(reference: Sequence[str], hypothesis: Sequence[str]) -> list[tuple[int, int]]:
    """`(reference index, hypothesis index)` of the words where the two agree.

    Example:
    >>> matched_words(["a", "b", "c"], ["a", "x", "c", "d"])
    [(0, 0), (2, 2)]
    """
    matcher = difflib.SequenceMatcher(a=list(reference), b=list(hypothesis), autojunk=False)
    return [
        (block.a + k, block.b + k)
        for block in matcher.get_matching_blocks()
        for k in range(block.size)
    ]


def right_words(reference: Sequence[str], hypothesis: Sequence[str]) -> np.ndarray:
    """bool `[len(hypothesis)]`: which hypothesis words are right (`matched_words`).

    Example:
    >>> right_words(["a", "b"], ["a", "c"]).tolist()
    [True, False]
    """
    right = np.zeros(len(hypothesis), bool)
    right[[hyp for _, hyp in matched_words(reference, hypothesis)]] = True
    return right


def _log_likelihood(confidences: np.ndarray, right: np.ndarray, exponent: float) -> float:
    calibrated = np.clip(confidences**exponent, _EPSILON, 1 - _EPSILON)
    return float(np.mean(np.where(right, np.log(calibrated), np.log1p(-calibrated))))


def fit_exponent(confidences, right) -> float:
    """The exponent whose `confidences ** exponent` best predicts `right`
    (maximum likelihood over a log-spaced grid from 0.005 to 5).

    Args:
        confidences: float `[words]` raw confidences in (0, 1].
        right: bool `[words]`.

    Returns:
        The exponent; 1.0 when every word is right or every one wrong (no
        evidence to fit).

    Example:
    >>> rng = np.random.default_rng(0)
    >>> raw = rng.uniform(0.05, 1, 20000)
    >>> right = rng.uniform(size=raw.size) < raw**0.2
    >>> round(fit_exponent(raw, right), 1)
    0.2
    """
    confidences = np.asarray(confidences, np.float64)
    right = np.asarray(right, bool)
    if right.all() or not right.any():
        return 1.0
    likelihoods = [_log_likelihood(confidences, right, e) for e in _EXPONENTS]
    return float(_EXPONENTS[int(np.argmax(likelihoods))])


def reliability_table(confidences, right, bins: int = 10) -> tuple[list[dict], float]:
    """Words binned by confidence: how sure, and how often right.

    Args:
        confidences: float `[words]`.
        right: bool `[words]`.
        bins: equal-width bins over [0, 1].

    Returns:
        `(rows, expected_calibration_error)`: a row per non-empty bin
        (`low`, `high`, `words`, `confidence`: their mean, `accuracy`: the
        share right), and the words-weighted mean of |confidence - accuracy|.

    Example:
    >>> rows, error = reliability_table([0.95, 0.85, 0.9], [True, False, True], bins=10)
    >>> [(row["low"], row["words"], row["accuracy"]) for row in rows], round(error, 3)
    ([(0.8, 1, 0.0), (0.9, 2, 1.0)], 0.333)
    """
    confidences = np.asarray(confidences, np.float64)
    right = np.asarray(right, bool)
    index = np.minimum((confidences * bins).astype(int), bins - 1)
    rows, error = [], 0.0
    for number in range(bins):
        inside = index == number
        if not inside.any():
            continue
        confidence, accuracy = confidences[inside].mean(), right[inside].mean()
        rows.append(
            {
                "low": round(number / bins, 3),
                "high": round((number + 1) / bins, 3),
                "words": int(inside.sum()),
                "confidence": round(float(confidence), 4),
                "accuracy": round(float(accuracy), 4),
            }
        )
        error += inside.sum() / len(confidences) * abs(confidence - accuracy)
    return rows, float(error)


def save_calibration(output_dir: str, exponent: float, checkpoint: str, **facts) -> str:
    """Writes `CALIBRATION_FILE` in `output_dir` and returns its path.

    The file holds the exponent, the checkpoint it was fitted for (its
    basename) and `facts` (the split, word counts).
    """
    path = os.path.join(output_dir, CALIBRATION_FILE)
    record = {"exponent": exponent, "checkpoint": os.path.basename(checkpoint), **facts}
    run_dir.write_atomically(path, json.dumps(record, indent=1) + "\n")
    return path


def calibration_exponent(output_dir: str, checkpoint: str) -> tuple[float, str | None]:
    """The stored exponent for `checkpoint`, and a sentence when it is for another checkpoint.

    One for another checkpoint means a model trained on since: its
    confidences are left raw rather than calibrated for another model.

    Returns:
        `(exponent, note)`: `(1.0, None)` without a calibration file;
        `(1.0, note)` when it was fitted for another checkpoint.

    Raises:
        ValueError: the file is not a calibration (the message says what to do).
    """
    path = os.path.join(output_dir, CALIBRATION_FILE)
    record = run_dir.read_json(path)
    if record is None:
        return 1.0, None
    if not isinstance(record, dict) or "exponent" not in record:
        raise ValueError(
            f"{path} is not a word confidence calibration: delete it or rerun "
            "scripts/calibrate_word_confidence.py."
        )
    if record.get("checkpoint") != os.path.basename(checkpoint):
        return 1.0, (
            f"{path} was fitted for {record.get('checkpoint')}, not "
            f"{os.path.basename(checkpoint)}: word confidences are left uncalibrated; rerun "
            "scripts/calibrate_word_confidence.py for this checkpoint."
        )
    return float(record["exponent"]), None


def with_run_calibration(
    config: DecodeConfig, output_dir: str, checkpoint: str
) -> tuple[DecodeConfig, str | None]:
    """`config` with decode hparam `word_confidence_exponent` resolved.

    It is left as given, or (`RUN_CALIBRATION`) made the run's stored
    exponent for `checkpoint` (`calibration_exponent`).

    Returns:
        `(config, note)`: the note (one sentence, or None) says why a stored
        calibration was not applied.

    Raises:
        ValueError: the stored calibration is not one (`calibration_exponent`).
    """
    if config.word_confidence_exponent != RUN_CALIBRATION:
        return config, None
    exponent, note = calibration_exponent(output_dir, checkpoint)
    return config.replace(word_confidence_exponent=exponent), note
