"""How much does a language model lower WER? Shallow fusion, its weight tuned on dev.

    python scripts/lm_fusion.py --output_dir=$ASR --lm_dir=$LM --data_dir=$DATA \
        [--weights=0.1,0.2,0.3,0.5] [--decode_hparams=beam_size=4,ctc_weight=0.3] \
        [--work_dir=$ASR/lm_fusion] [--output_json=PATH] \
        [--dev_split=dev] [--test_split=test]

A mix names its members' splits: `--dev_split=dev_mini_librispeech
--test_split=test_mini_librispeech`. `--lm_dir` is a trained LM's run or a
word n-gram's `t2t-lite-ngram` output, as the decode hparam takes either.

Runs `t2t-lite-decoder` (as a user would) on the dev split without the LM
and with each `lm_weight`, picks the weight with the lowest dev WER, then
decodes the test split without the LM and with that weight, and prints a
table: WER, CER and decode time of each. Each decode writes its hypotheses
and `.metrics.json` under `--work_dir`; a decode already there (same name)
is read back instead of run again, so an interrupted sweep resumes.
"""

from __future__ import annotations

import json
import os

from decode_runs import decode_arguments, finish, run_decoder


def decode(args, split: str, lm_weight: float) -> dict:
    """One decoder run (or its saved result): metrics plus `seconds`."""
    name = f"{split}_lm{lm_weight:g}"
    target = os.path.join(args.work_dir, f"{name}.txt")
    summary = target + ".run.json"
    if os.path.exists(summary):
        with open(summary) as handle:
            return json.load(handle)
    overrides = args.decode_hparams
    if lm_weight > 0:
        overrides = f"{overrides},lm_dir={args.lm_dir},lm_weight={lm_weight}"
    seconds = run_decoder(args.output_dir, args.data_dir, split, target, overrides)
    with open(target + ".metrics.json") as handle:
        metrics = json.load(handle)
    run = {
        "split": split,
        "lm_weight": lm_weight,
        "wer": metrics["wer"],
        "cer": metrics["cer"],
        "seconds": seconds,
        "groups": {k: v["wer"] for k, v in metrics.get("groups", {}).items()},
    }
    with open(summary, "w") as handle:
        json.dump(run, handle)
    print(f"  {split} lm_weight={lm_weight:g}: WER {run['wer']:.2%} ({seconds:.0f} s)", flush=True)
    return run


def main() -> None:
    parser = decode_arguments(__doc__.split("\n")[0], "lm_fusion")
    parser.add_argument(
        "--lm_dir", required=True, help="the language model's run, or t2t-lite-ngram's output"
    )
    parser.add_argument("--weights", default="0.1,0.2,0.3,0.5")
    parser.add_argument("--dev_split", default="dev", help="where the weight is chosen")
    parser.add_argument("--test_split", default="test")
    args = finish(parser.parse_args(), "lm_fusion")
    weights = [float(w) for w in args.weights.split(",")]

    print("dev:", flush=True)
    dev = [decode(args, args.dev_split, w) for w in [0.0] + weights]
    best = min(dev, key=lambda run: (run["wer"], run["lm_weight"]))
    print(f"test (lm_weight {best['lm_weight']:g}, the best on dev):", flush=True)
    test = [decode(args, args.test_split, 0.0)]
    if best["lm_weight"] > 0:
        test.append(decode(args, args.test_split, best["lm_weight"]))

    print("\n| split | lm_weight | WER | CER | decode time |")
    print("|---|---:|---:|---:|---:|")
    for run in dev + test:
        print(
            f"| {run['split']} | {run['lm_weight']:g} | {run['wer']:.2%} | {run['cer']:.2%} "
            f"| {run['seconds']:.0f} s |"
        )
    if len(test) == 2:
        relative = 1 - test[1]["wer"] / test[0]["wer"]
        slower = test[1]["seconds"] / test[0]["seconds"]
        print(
            f"\ntest: {relative:.1%} relative lower WER with the LM; decoding {slower:.2f}x as long"
        )
    if args.output_json:
        with open(args.output_json, "w") as handle:
            json.dump(
                {"dev": dev, "test": test, "best_weight": best["lm_weight"]}, handle, indent=2
            )


if __name__ == "__main__":
    main()
