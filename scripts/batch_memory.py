"""Host memory one training step needs, per batch shape of an hparams set.

For each batch shape the static-shape pipeline makes (one per length
bucket; with `--shapes=` given as `utterancesxframes,...`, those instead),
a fresh subprocess builds the trainer's model, optimizer and step, reads its
peak resident memory (ru_maxrss), runs one training step on a synthetic
batch of that shape, and reads it again: the difference is what the batch
took beyond the model and optimizer state (activations kept for the
backward pass, gradients, workspace). float32, TF's CPU kernels, no XLA.

    python scripts/batch_memory.py --hparams_set=transformer_librispeech_tpu
    python scripts/batch_memory.py --hparams_set=transformer_librispeech_tpu \\
        --shapes=16x1550,6x3600

Prints one line per shape; `docs/benchmarks.md` ("Memory of a LibriSpeech
batch") quotes its output.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

from absl import app, flags

flags.DEFINE_string("problem", "librispeech_clean_small", "Registered problem.")
flags.DEFINE_string("hparams_set", "transformer_librispeech_tpu", "Registered hparams set.")
flags.DEFINE_string("hparams", "", "Overrides, name=value,...")
flags.DEFINE_string("shapes", "", "utterances x frames per batch, e.g. 16x1550,6x3600.")
flags.DEFINE_string("_child", "", "Internal: measure this one JSON shape.")
FLAGS = flags.FLAGS


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _measure(shape: dict) -> None:
    """Child: one step on one batch shape; prints a JSON line of MiB figures."""
    import tensorflow as tf  # noqa: F401
    from step_harness import synthetic_batch, training_step

    import t2t_lite.hparams  # noqa: F401  (registers the sets)
    import t2t_lite.problems  # noqa: F401
    from t2t_lite import registry
    from t2t_lite.hparam import create_hparams

    problem = registry.problem(FLAGS.problem)
    hparams = create_hparams(FLAGS.hparams_set, FLAGS.hparams, problem)
    if shape["targets"][1] is None:
        shape["targets"][1] = hparams.max_target_seq_length
    step = training_step(problem, hparams, jit_compile=False)
    batch = synthetic_batch(problem, hparams, shape)
    before = _peak_mib()
    loss = float(step(batch)["loss"])
    figures = {"before_mib": before, "peak_mib": _peak_mib(), "loss": loss}
    print(json.dumps({**figures, "targets": shape["targets"][1]}), flush=True)


def _shapes() -> list[dict]:
    if not FLAGS.shapes:
        import t2t_lite.hparams  # noqa: F401
        import t2t_lite.problems  # noqa: F401
        from t2t_lite import registry
        from t2t_lite.data import pipeline
        from t2t_lite.hparam import create_hparams

        problem = registry.problem(FLAGS.problem)
        hparams = create_hparams(FLAGS.hparams_set, FLAGS.hparams, problem)
        return pipeline.static_batch_shapes(problem, hparams)
    shapes = []
    for item in FLAGS.shapes.split(","):
        utterances, frames = (int(v) for v in item.lower().split("x"))
        # Targets padded as the static pipeline pads them; filled in by the child.
        shapes.append({"inputs": [utterances, frames, None, None], "targets": [utterances, None]})
    return shapes


def main(argv):
    del argv
    if FLAGS._child:
        _measure(json.loads(FLAGS._child))
        return 0
    print(f"{FLAGS.hparams_set} ({FLAGS.hparams or 'no overrides'}), one training step, float32:")
    for shape in _shapes():
        command = [sys.executable, os.path.abspath(__file__), f"--_child={json.dumps(shape)}"]
        for name in ("problem", "hparams_set", "hparams"):
            command.append(f"--{name}={getattr(FLAGS, name)}")
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            print(result.stderr[-2000:], file=sys.stderr)
            return 1
        figures = json.loads(result.stdout.strip().splitlines()[-1])
        utterances, frames = shape["inputs"][0], shape["inputs"][1]
        step_mib = figures["peak_mib"] - figures["before_mib"]
        print(
            f"  {utterances:>2} utterances x {frames} frames ({frames / 100:.1f} s), "
            f"targets {figures['targets']}: step {step_mib / 1024:.2f} GiB beyond the "
            f"model and optimizer ({figures['before_mib'] / 1024:.2f} GiB), "
            f"loss {figures['loss']:.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(app.run(main))
