"""Calibrates a speech model's word confidences on a split with references.

    python scripts/calibrate_word_confidence.py --output_dir=t2t_quickstart/train \
        --data_dir=t2t_quickstart/data [--split=dev] [--check_split=test]

Decodes `--split` with word times and raw confidences (as the decoder does),
marks each hypothesis word right or wrong against the reference
(`word_confidence.right_words`), fits the exponent whose
`confidence ** exponent` best predicts it, and writes it to the run's
`word_confidence.json` for the checkpoint decoded: the decoder and the
exporter apply it from then on (`decode_hparams` `word_confidence_exponent`,
unless given). Prints the reliability table (confidence bins: mean
confidence against the share right, and the expected calibration error)
before and after, on `--split` and on `--check_split` (another split, whose
figures say whether the fit holds beyond the words it was fitted on).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.input_batches import record_waveform_batches
from t2t_lite.decoding.timing.word_confidence import (
    fit_exponent,
    reliability_table,
    right_words,
    save_calibration,
)

# The flags and the run are word_time_accuracy's.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from word_time_accuracy import problem_of, run_arguments, run_of  # noqa: E402


def confidences_and_rightness(transcriber, problem, data_dir, split, batch_size):
    """`(confidences, right)` over every hypothesis word of `split` that the
    alignment placed (a word with no frames has no confidence to calibrate)."""
    target_encoder = problem.feature_encoders(data_dir)["targets"]
    confidences, right = [], []
    for waveforms, lengths, targets, _ in record_waveform_batches(
        problem, data_dir, split, batch_size
    ):
        for result, target in zip(transcriber.timed(waveforms, lengths), targets, strict=True):
            words = list(result.words)
            reference = target_encoder.decode(target).split()
            rightness = right_words(reference, [w.word for w in words])
            for word, is_right in zip(words, rightness, strict=True):
                if word.start >= 0:
                    confidences.append(word.confidence)
                    right.append(is_right)
    return np.array(confidences), np.array(right, bool)


def report(name, confidences, right, exponent):
    """The reliability tables, raw and calibrated, as a dict (and printed)."""
    raw_rows, raw_error = reliability_table(confidences, right)
    rows, error = reliability_table(confidences**exponent, right)
    print(f"{name}: {len(right)} words, {right.mean():.1%} right")
    for label, table, ece in (("raw", raw_rows, raw_error), ("calibrated", rows, error)):
        print(f"  {label}: expected calibration error {ece:.3f}")
        for row in table:
            print(
                f"    [{row['low']:.1f}, {row['high']:.1f}) {row['words']:5d} words: "
                f"confidence {row['confidence']:.3f}, right {row['accuracy']:.3f}"
            )
    return {
        "words": int(len(right)),
        "right": round(float(right.mean()), 4),
        "raw_ece": round(raw_error, 4),
        "calibrated_ece": round(error, 4),
        "raw": raw_rows,
        "calibrated": rows,
    }


def main() -> None:
    parser = run_arguments(__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", help="the split fitted on")
    parser.add_argument("--check_split", default="test", help="'' for none")
    parser.add_argument("--output_json", default=None, help="the tables, as JSON")
    args = parser.parse_args()

    problem = problem_of(args)
    # Raw confidences: the exponent is fitted to them.
    decode_config = DecodeConfig.parse(args.decode_hparams).replace(word_confidence_exponent=1.0)
    transcriber, checkpoint = WaveformTranscriber.of_run(run_of(args, problem), decode_config)
    if not transcriber.timed_words:
        raise SystemExit(f"{args.output_dir}'s model has no CTC head: its words have no times.")
    splits = [args.split] + ([args.check_split] if args.check_split else [])
    measured = {
        split: confidences_and_rightness(
            transcriber, problem, args.data_dir, split, decode_config.batch_size
        )
        for split in splits
    }
    if not measured[args.split][0].size:
        raise SystemExit(
            f"the model placed no words in {args.split}: nothing to calibrate on (train longer, "
            "or pick a split it transcribes)."
        )
    exponent = fit_exponent(*measured[args.split])
    tables = {split: report(split, *measured[split], exponent) for split in splits}
    path = save_calibration(
        args.output_dir,
        round(exponent, 4),
        checkpoint,
        split=args.split,
        words=tables[args.split]["words"],
        ece=tables[args.split]["calibrated_ece"],
    )
    print(f"exponent {exponent:.4f} for {checkpoint}, written to {path}")
    if args.output_json:
        with open(args.output_json, "w", encoding="utf-8") as handle:
            json.dump({"exponent": exponent, "tables": tables}, handle, indent=1)


if __name__ == "__main__":
    main()
