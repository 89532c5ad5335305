"""Does a phrase list help the words it lists, and leave the others alone?

    python scripts/hotword_bias.py --output_dir=$ASR --data_dir=$DATA \
        [--split=test] [--num_words=100] [--max_train_count=2] [--boost=0.5] \
        [--decode_hparams=beam_size=4,ctc_weight=0.3] [--work_dir=$ASR/hotwords]

Lists rare words, as a user lists names or product words: words of the
split's references seen at most `--max_train_count` times in the training
transcripts (at least 4 letters; `--num_words` of them drawn with a fixed
seed). Runs `t2t-lite-decoder` on the split without and with
`hotwords_file=<the list>`, then reports:

- recall of the listed words: of their occurrences in the references, how
  many the hypothesis of the same utterance holds (multiset), without and
  with the list ("half of the misses recovered" is the goal);
- false alarms: listed words a hypothesis holds more often than its reference;
- WER on the utterances that contain no listed word, without and with the
  list (it must not get worse: biasing must not pull unrelated words);
- decode time of both.

A decode already in `--work_dir` is read back, so a run resumes.
"""

from __future__ import annotations

import collections
import json
import os
import random

import jiwer
import tensorflow as tf
from decode_runs import decode_arguments, finish, run_decoder

from t2t_lite import registry, run_dir
from t2t_lite.data.dataset_options import without_autotuning
from t2t_lite.decoding.decode_config import DEFAULT_BOOST

MIN_LETTERS = 4


def training_word_counts(problem, data_dir: str) -> collections.Counter:
    """Word counts of the training split's transcripts (only targets are parsed;
    a mix's are its members')."""
    encoder = problem.feature_encoders(data_dir)["targets"]
    counts = collections.Counter()
    spec = {"targets": tf.io.VarLenFeature(tf.int64)}
    paths = problem.require_data(data_dir, "train")
    for record in without_autotuning(tf.data.TFRecordDataset(paths)):
        ids = tf.sparse.to_dense(tf.io.parse_single_example(record, spec)["targets"]).numpy()
        counts.update(encoder.decode(ids).split())
    return counts


def decode(args, name: str, extra: str) -> tuple[list[str], list[str], float]:
    """Hypotheses, references and seconds of one decoder run (or its saved result)."""
    target = os.path.join(args.work_dir, f"{name}.txt")
    timing = target + ".seconds"
    if not os.path.exists(timing):
        hparams = f"{args.decode_hparams}{extra}"
        seconds = run_decoder(args.output_dir, args.data_dir, args.split, target, hparams)
        with open(timing, "w") as handle:
            handle.write(f"{seconds:.1f}\n")
    with open(target) as hyps, open(target + ".targets") as refs, open(timing) as seconds:
        return hyps.read().splitlines(), refs.read().splitlines(), float(seconds.read())


def listed_counts(text: str, listed: set[str]) -> collections.Counter:
    return collections.Counter(w for w in text.split() if w in listed)


def report(name, hyps, refs, listed) -> dict:
    found = total = false_alarms = 0
    other_refs, other_hyps = [], []
    for hyp, ref in zip(hyps, refs, strict=True):
        wanted, got = listed_counts(ref, listed), listed_counts(hyp, listed)
        total += sum(wanted.values())
        found += sum((wanted & got).values())
        false_alarms += sum((got - wanted).values())
        if not wanted:
            other_refs.append(ref)
            other_hyps.append(hyp)
    return {
        "name": name,
        "recall": found / max(total, 1),
        "occurrences": total,
        "false_alarms": false_alarms,
        "other_wer": jiwer.wer(other_refs, other_hyps),
        "other_utterances": len(other_refs),
        "wer": jiwer.wer(refs, hyps),
    }


def main() -> None:
    parser = decode_arguments(__doc__.split("\n")[0], "hotwords")
    parser.add_argument("--split", default="test")
    parser.add_argument("--num_words", type=int, default=100)
    parser.add_argument("--max_train_count", type=int, default=2)
    parser.add_argument("--boost", type=float, default=DEFAULT_BOOST)
    args = finish(parser.parse_args(), "hotwords")

    problem = registry.problem(run_dir.load_flags(args.output_dir)["problem"])
    plain_hyps, refs, plain_seconds = decode(args, f"{args.split}_plain", "")
    train = training_word_counts(problem, args.data_dir)
    candidates = sorted(
        {w for ref in refs for w in ref.split() if len(w) >= MIN_LETTERS}
        - {w for w, n in train.items() if n > args.max_train_count}
    )
    listed = sorted(random.Random(762).sample(candidates, min(args.num_words, len(candidates))))
    list_path = os.path.join(args.work_dir, "hotwords.txt")
    with open(list_path, "w") as handle:
        handle.write("".join(f"{word}\n" for word in listed))
    extra = f",hotwords_file={list_path},hotword_boost={args.boost:g}"
    biased_hyps, biased_refs, biased_seconds = decode(
        args, f"{args.split}_biased{args.boost:g}", extra
    )
    assert biased_refs == refs
    rows = [
        report("without the list", plain_hyps, refs, set(listed)),
        report(f"with the list (boost {args.boost:g})", biased_hyps, refs, set(listed)),
    ]
    rows[0]["seconds"], rows[1]["seconds"] = plain_seconds, biased_seconds
    print(f"{len(listed)} listed words (of {len(candidates)} candidates), "
          f"{rows[0]['occurrences']} occurrences in {args.split}")  # fmt: skip
    columns = ["listed-word recall", "false alarms", "WER, utterances without listed words"]
    print(f"| | {' | '.join(columns)} | WER, all | decode time |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['name']} | {row['recall']:.1%} | {row['false_alarms']} "
            f"| {row['other_wer']:.2%} ({row['other_utterances']}) | {row['wer']:.2%} "
            f"| {row['seconds']:.0f} s |"
        )
    misses = 1 - rows[0]["recall"]
    recovered = (rows[1]["recall"] - rows[0]["recall"]) / misses if misses else 0.0
    print(f"misses recovered: {recovered:.0%}")
    if args.output_json:
        with open(args.output_json, "w") as handle:
            json.dump({"words": listed, "rows": rows, "recovered": recovered}, handle, indent=2)


if __name__ == "__main__":
    main()
