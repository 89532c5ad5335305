"""How a recognizer holds up in a room: WER of the test split under each listening condition.

    t2t-lite-datagen --problem=spoken_synth --data_dir=$DATA --noisy_test
    python scripts/noise_robustness.py --output_dir=t2t_quickstart/train --data_dir=$DATA \
        [--decode_hparams=beam_size=4,alpha=0.6,batch_size=32] [--conditions=floor60_lead1,...]

Decodes the clean test split and each `test_<condition>` split datagen wrote
(`t2t_lite/data/audio_augment/conditions.py`: noise floors before and under
the speech, white / pink / brown noise, mains hum, knocks and beeps, and babble at 20 and
10 dB SNR, a reverberant room) with `t2t-lite-decoder`, as a user runs it,
and prints a Markdown table: each condition's WER, CER and WER over the
clean one. A decode already in `--work_dir` is read back, so a run resumes.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_runs import decode_arguments, finish, run_decoder  # noqa: E402

from t2t_lite.data.audio_augment.conditions import CONDITIONS  # noqa: E402
from t2t_lite.data.noisy_splits import condition_split  # noqa: E402


def _metrics(args, split: str) -> dict:
    target = os.path.join(args.work_dir, f"decode_{split}.txt")
    if not os.path.exists(target + ".metrics.json"):
        run_decoder(args.output_dir, args.data_dir, split, target, args.decode_hparams)
    with open(target + ".metrics.json") as handle:
        return json.load(handle)


def main() -> None:
    parser = decode_arguments(__doc__.split("\n\n")[0], "noise_robustness")
    parser.add_argument("--split", default="test")
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    args = finish(parser.parse_args(), "noise_robustness")
    names = [name for name in args.conditions.split(",") if name]
    unknown = sorted(set(names) - set(CONDITIONS))
    if unknown:
        sys.exit(f"noise_robustness: unknown conditions {unknown}; known: {', '.join(CONDITIONS)}")
    clean = _metrics(args, args.split)
    rows = {"clean": clean}
    for name in names:
        rows[name] = _metrics(args, condition_split(name, args.split))
        print(f"{name}: WER {rows[name]['wer']:.4f}", file=sys.stderr)
    print("| condition | WER | CER | x clean WER |\n|---|---:|---:|---:|")
    for name, metrics in rows.items():
        ratio = metrics["wer"] / clean["wer"] if clean["wer"] else float("inf")
        print(f"| {name} | {metrics['wer']:.1%} | {metrics['cer']:.1%} | {ratio:.2f} |")
    if args.output_json:
        with open(args.output_json, "w") as handle:
            json.dump({name: m["wer"] for name, m in rows.items()}, handle, indent=2)


if __name__ == "__main__":
    main()
