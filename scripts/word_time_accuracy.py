"""How close are a trained speech model's word times to when the words were said?

    python scripts/word_time_accuracy.py --output_dir=t2t_quickstart/train \
        --data_dir=t2t_quickstart/data [--split=test] [--examples=0] [--output_json=PATH]

Decodes a `spoken_synth` split with word times, as the decoder and the
SavedModel's `transcribe_timed` do (`WaveformTranscriber.timed`), and
compares them with the corpus's own word times (`spoken_synth-word_times.json`
beside the shards: eSpeak NG's phoneme events, trimmed to the sounding
audio). Hypothesis words are paired with reference words where the two
transcripts agree (`word_confidence.matched_words`: substituted, inserted
and deleted words have no true time to compare with). Reported over the pairs:

- mean absolute start and end error (ms), and their mean signed error (a
  constant bias, e.g. of where a 40 ms encoder frame is placed);
- the share of boundaries within 25, 50 and 100 ms: of all of them, and of
  starts and ends apart (a CTC head fires late, so starts lag);
- how many reference words were paired;
- what the alignment adds to decoding: the same batches decoded with and
  without word times (both graphs traced first), as a fraction.

Anchors: phonetic forced aligners reach 17-20 ms mean boundary error on
TIMIT/Buckeye; CTC alignments are coarser (peaky posteriors, 40 ms frames).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from t2t_lite import registry
from t2t_lite.data.spoken_synth.spoken_word_times import load_word_times
from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.input_batches import record_waveform_batches
from t2t_lite.decoding.timing.word_confidence import matched_words
from t2t_lite.usr_dir import import_usr_dir

# The shares reported; 25 ms is about a forced aligner's mean boundary error
# (the Montreal Forced Aligner's on TIMIT: 21 ms).
WITHIN_MS = (25, 50, 100)


def paired_boundaries(reference: list, hypothesis: list) -> list[tuple]:
    """`(reference, hypothesis)` word pairs where the two transcripts agree.

    Args:
        reference: `(word, start, end)` triples (the corpus's `WordTime`s).
        hypothesis: objects with `word`, `start`, `end` (`subtitles.TimedWord`);
            words the aligner could not place (start < 0) are left out.

    Returns:
        A list of `((ref_start, ref_end), (hyp_start, hyp_end))`.

    Example:
    >>> from t2t_lite.decoding.timing.subtitles import TimedWord
    >>> paired_boundaries([["a", 0.1, 0.3], ["b", 0.4, 0.6]],
    ...                   [TimedWord("a", 0.12, 0.28, 1.0), TimedWord("c", 0.4, 0.6, 1.0)])
    [((0.1, 0.3), (0.12, 0.28))]
    """
    pairs = []
    for i, j in matched_words([w[0] for w in reference], [w.word for w in hypothesis]):
        ref, hyp = reference[i], hypothesis[j]
        if hyp.start >= 0:
            pairs.append(((ref[1], ref[2]), (hyp.start, hyp.end)))
    return pairs


def summarize(pairs: list[tuple], reference_words: int) -> dict:
    """The report's figures (see the module docstring) over `pairs`."""
    if not pairs:
        return {"reference_words": reference_words, "paired_words": 0}
    reference = np.array([p[0] for p in pairs])  # [pairs, 2]: start, end
    hypothesis = np.array([p[1] for p in pairs])
    signed = (hypothesis - reference) * 1000.0
    errors = np.abs(signed)
    return {
        "reference_words": reference_words,
        "paired_words": len(pairs),
        "start_mean_abs_ms": round(float(errors[:, 0].mean()), 1),
        "end_mean_abs_ms": round(float(errors[:, 1].mean()), 1),
        "start_mean_signed_ms": round(float(signed[:, 0].mean()), 1),
        "end_mean_signed_ms": round(float(signed[:, 1].mean()), 1),
        **{
            f"{name}within_{ms}ms": round(float((column <= ms).mean()), 4)
            for ms in WITHIN_MS
            for name, column in (("", errors), ("start_", errors[:, 0]), ("end_", errors[:, 1]))
        },
    }


def run_arguments(description: str) -> argparse.ArgumentParser:
    """The flags of the word-time scripts (this one and
    `calibrate_word_confidence.py`): the run, its data and problem, the
    checkpoint and the decode hparams."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--output_dir", required=True, help="a t2t-lite-trainer run")
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--problem", default="spoken_synth")
    parser.add_argument("--t2t_usr_dir", default=None, help="a directory registering it")
    parser.add_argument("--checkpoint_path", default=None, help="default: the latest")
    parser.add_argument("--decode_hparams", default="beam_size=4,alpha=0.6,batch_size=16")
    return parser


def problem_of(args):
    """The `--problem`, registered by `--t2t_usr_dir` if given."""
    if args.t2t_usr_dir:
        import_usr_dir(args.t2t_usr_dir)
    return registry.problem(args.problem)


def run_of(args, problem) -> TrainedRun:
    """The `--output_dir` run (at `--checkpoint_path` if given)."""
    return TrainedRun.of(
        args.output_dir, problem, data_dir=args.data_dir, checkpoint_path=args.checkpoint_path
    )


def main() -> None:
    parser = run_arguments(__doc__.splitlines()[0])
    parser.add_argument("--split", default="test")
    parser.add_argument("--examples", type=int, default=0, help="0: every one")
    parser.add_argument("--output_json", default=None)
    args = parser.parse_args()

    problem = problem_of(args)
    word_times_path = problem.word_times_path(args.data_dir)
    if not os.path.exists(word_times_path):
        raise SystemExit(
            f"{word_times_path} does not exist: rerun t2t-lite-datagen for {args.problem}."
        )
    truth = load_word_times(word_times_path)
    decode_config = DecodeConfig.parse(args.decode_hparams)
    transcriber, _ = WaveformTranscriber.of_run(run_of(args, problem), decode_config)
    pairs, reference_words, done = [], 0, 0
    seconds = {"plain": 0.0, "timed": 0.0}
    batches = list(
        record_waveform_batches(problem, args.data_dir, args.split, decode_config.batch_size)
    )
    if batches:  # trace both graphs first: only steady-state decoding is timed
        transcriber(*batches[0][:2])
        transcriber.timed(*batches[0][:2])
    for waveforms, lengths, _, utterance_ids in batches:
        if args.examples and done >= args.examples:
            break
        start = time.perf_counter()
        transcriber(waveforms, lengths)
        seconds["plain"] += time.perf_counter() - start
        start = time.perf_counter()
        results = transcriber.timed(waveforms, lengths)
        seconds["timed"] += time.perf_counter() - start
        for result, utterance_id in zip(results, utterance_ids, strict=True):
            words = list(result.words)
            if args.examples and done >= args.examples:
                break
            reference = truth[utterance_id]
            reference_words += len(reference)
            pairs += paired_boundaries(reference, words)
            done += 1
    report = {"split": args.split, "utterances": done, **summarize(pairs, reference_words)}
    report["decode_seconds"] = round(seconds["plain"], 2)
    report["timed_decode_seconds"] = round(seconds["timed"], 2)
    report["alignment_overhead"] = round(seconds["timed"] / max(seconds["plain"], 1e-9) - 1, 3)
    print(json.dumps(report, indent=1))
    if args.output_json:
        with open(args.output_json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)


if __name__ == "__main__":
    main()
