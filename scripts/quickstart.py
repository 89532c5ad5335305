"""The quick start: speech recognition end to end on the built-in spoken corpus.

    python scripts/quickstart.py [--work_dir=t2t_quickstart] [--train_steps=N]
        [--hparams_set=transformer_speech_small_streaming]

Runs the four t2t-lite commands a user would and prints what each took:
datagen (`spoken_synth`, speech synthesized offline with eSpeak NG),
training (`transformer_speech_small`, in a room: noise floors, noise,
babble, reverberation), then at once (both only read the
checkpoint, and each is mostly one core of tracing) decoding of the test
split (a voice never heard in training) with its WER, and a SavedModel
export, and prints the command that serves the page to talk to it.
`--hparams_set=transformer_speech_small_streaming` trains the
streaming variant (README, "Streaming"). Rerunning reuses the data and
resumes training from the last checkpoint.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time

PROBLEM = "spoken_synth"
HPARAMS_SET = "transformer_speech_small"
# Enough for the held-out voice's WER to settle under 3.5% with the room's
# augmentation on (2,800 were without it), within the quick start's 12
# minutes on two cores (docs/benchmarks.md, "In a room").
TRAIN_STEPS = 4000


def _start(title: str, command: list[str]) -> subprocess.Popen:
    # One argument per line: with long paths a command passes any screen's width.
    print(f"\n=== {title}: " + " \\\n      ".join(command), flush=True)
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )


def _finish(title: str, process: subprocess.Popen) -> None:
    if process.wait() != 0:
        sys.exit(f"quickstart: {title} failed (exit {process.returncode}); see the output above.")


def run_step(title: str, command: list[str]) -> tuple[str, float]:
    """Runs one command, streaming its output; exits if it fails."""
    start = time.time()
    process = _start(title, command)
    lines = []
    for line in process.stdout:
        lines.append(line)
        print(line, end="", flush=True)
    _finish(title, process)
    return "".join(lines), time.time() - start


def run_steps_together(steps: dict[str, list[str]]) -> dict[str, tuple[str, float]]:
    """Runs independent commands at once (each mostly one core of tracing), then
    prints each one's output in turn; exits if any fails."""
    start = time.time()
    processes = {title: _start(title, command) for title, command in steps.items()}
    results = {}
    outputs = {}

    def collect(title: str, process: subprocess.Popen) -> None:
        outputs[title] = process.stdout.read()
        process.wait()
        results[title] = time.time() - start

    threads = [
        threading.Thread(target=collect, args=item, daemon=True) for item in processes.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for title, process in processes.items():
        print(f"\n--- {title}:")
        print(outputs[title], end="")
        _finish(title, process)
    return {title: (outputs[title], results[title]) for title in steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work_dir", default="t2t_quickstart")
    parser.add_argument("--train_steps", type=int, default=TRAIN_STEPS)
    parser.add_argument("--hparams_set", default=HPARAMS_SET)
    parser.add_argument(
        "--decode_hparams", default="beam_size=4,alpha=0.6,batch_size=32,ctc_weight=0.3"
    )
    args = parser.parse_args()
    work = os.path.abspath(args.work_dir)
    data_dir, tmp_dir = os.path.join(work, "data"), os.path.join(work, "tmp")
    output_dir, export_dir = os.path.join(work, "train"), os.path.join(work, "export")
    timings = {}
    started = time.time()

    _, timings["datagen"] = run_step(
        "datagen",
        [
            "t2t-lite-datagen",
            f"--problem={PROBLEM}",
            f"--data_dir={data_dir}",
            f"--tmp_dir={tmp_dir}",
        ],
    )
    _, timings["train"] = run_step(
        "train",
        [
            "t2t-lite-trainer",
            f"--problem={PROBLEM}",
            f"--hparams_set={args.hparams_set}",
            f"--data_dir={data_dir}",
            f"--output_dir={output_dir}",
            f"--train_steps={args.train_steps}",
            # No dev evaluation (it would cost a trace and a pause): the loss
            # is logged every 100 steps and the decoder below measures the test.
            "--schedule=train",
            "--save_checkpoints_steps=500",
            "--log_step_count_steps=100",
            "--random_seed=1",
            # One thread per op: this model's ops are too small to split
            # well, so two cores do more running independent ops side by
            # side (docs/benchmarks.md, "Quick start runs").
            "--intra_op_parallelism_threads=1",
        ],
    )
    # Decoding and export only read the trained checkpoint: run them at once.
    together = run_steps_together(
        {
            "decode the held-out voice": [
                "t2t-lite-decoder",
                f"--problem={PROBLEM}",
                f"--data_dir={data_dir}",
                f"--output_dir={output_dir}",
                "--dataset_split=test",
                f"--decode_hparams={args.decode_hparams}",
            ],
            "export": [
                "t2t-lite-exporter",
                f"--problem={PROBLEM}",
                f"--data_dir={data_dir}",
                f"--output_dir={output_dir}",
                f"--export_dir={export_dir}",
                # The export decodes as the decoder step above does.
                f"--decode_hparams={args.decode_hparams}",
            ],
        }
    )
    decoded, timings["decode"] = together["decode the held-out voice"]
    _, timings["export"] = together["export"]
    wer = re.search(r"WER ([0-9.]+)", decoded)
    print("\n=== quickstart summary")
    for step, seconds in timings.items():
        print(f"  {step:8s} {seconds / 60:6.1f} min")
    print("  (decode and export run at the same time)")  # decode and export overlap
    print(f"  total    {(time.time() - started) / 60:6.1f} min")
    if wer:
        print(f"  held-out voice WER: {100 * float(wer.group(1)):.1f}%")
    print(f"  SavedModel: {export_dir}")
    print(
        f"\nTalk to it: t2t-lite-serve --export_dir={export_dir}  (then open http://127.0.0.1:8000/)"
    )


if __name__ == "__main__":
    main()
