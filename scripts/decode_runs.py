"""One `t2t-lite-decoder` run of a split, as a user runs it (for the measuring scripts)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def run_decoder(
    output_dir: str, data_dir: str, split: str, target: str, decode_hparams: str
) -> float:
    """Decodes `split` into `target` (and its `.targets`, `.metrics.json`).

    Returns:
        The seconds it took, the command's start-up included.

    Exits the script with the decoder's stderr when it fails.
    """
    command = [
        "t2t-lite-decoder",
        f"--output_dir={output_dir}",
        f"--data_dir={data_dir}",
        f"--dataset_split={split}",
        f"--decode_to_file={target}",
        f"--decode_hparams={decode_hparams}",
    ]
    started = time.time()
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        script = os.path.basename(sys.argv[0])
        sys.exit(f"{script}: {' '.join(command)} failed:\n{result.stderr[-2000:]}")
    return time.time() - started


def decode_arguments(description: str, work_subdir: str) -> argparse.ArgumentParser:
    """A parser with the arguments every measuring script takes; after
    parsing, `finish(args, work_subdir)` fills in and creates `--work_dir`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--output_dir", required=True, help="the recognizer's run")
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--decode_hparams", default="beam_size=4,alpha=0.6,batch_size=32")
    parser.add_argument("--work_dir", default="", help=f"default: <output_dir>/{work_subdir}")
    parser.add_argument("--output_json", default="")
    return parser


def finish(args, work_subdir: str):
    """`args` with `work_dir` set (and created)."""
    args.work_dir = args.work_dir or os.path.join(args.output_dir, work_subdir)
    os.makedirs(args.work_dir, exist_ok=True)
    return args
