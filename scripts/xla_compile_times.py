"""XLA compile time of the training step, per static batch shape.

XLA (and a Cloud TPU) compiles the training step once for every distinct
batch shape the static-shape pipeline makes. This builds the trainer's
model, optimizer and step for an hparams set, then runs the step on a
synthetic batch of each static shape twice: the first call's time minus
the second's is that shape's compile time (tracing included), in wall-clock
and in this process's CPU seconds (the fairer number on a shared machine:
XLA's CPU compiler runs on one core).

    python scripts/xla_compile_times.py --problem=librispeech_clean_small \
        --hparams_set=transformer_librispeech_tpu \
        --hparams="hidden_size=64,filter_size=128,num_encoder_layers=2,num_decoder_layers=2"

Prints one line per shape and the mean; `--shapes=N` measures only the
first N shapes.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from absl import app, flags
from step_harness import synthetic_batch, training_step

from t2t_lite import registry
from t2t_lite.data import pipeline
from t2t_lite.hparam import create_hparams

flags.DEFINE_string("problem", "librispeech_clean_small", "Registered problem.")
flags.DEFINE_string("hparams_set", "transformer_librispeech_tpu", "Registered hparams set.")
flags.DEFINE_string("hparams", "", "Overrides, name=value,...")
flags.DEFINE_integer("shapes", 0, "Measure only the first N shapes (0: all).")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    import t2t_lite.hparams  # noqa: F401  (registers the sets)
    import t2t_lite.problems  # noqa: F401

    problem = registry.problem(FLAGS.problem)
    hparams = create_hparams(FLAGS.hparams_set, FLAGS.hparams, problem)
    shapes = pipeline.static_batch_shapes(problem, hparams)
    print(pipeline.static_shapes_summary(problem, hparams))
    if FLAGS.shapes:
        shapes = shapes[: FLAGS.shapes]
    step = training_step(problem, hparams, jit_compile=True)
    walls, cpus = [], []
    for shape in shapes:
        batch = synthetic_batch(problem, hparams, shape)
        wall, cpu = [], []
        for _ in range(2):
            start, start_cpu = time.perf_counter(), time.process_time()
            loss = float(step(batch)["loss"])
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        walls.append(wall[0] - wall[1])
        cpus.append(cpu[0] - cpu[1])
        described = ", ".join(f"{k} {v}" for k, v in sorted(shape.items()))
        print(
            f"{described}: compile {walls[-1]:.1f} s ({cpus[-1]:.1f} CPU s), "
            f"step {wall[1]:.2f} s, loss {loss:.3f}",
            flush=True,
        )
    print(
        f"mean compile time per shape: {np.mean(walls):.1f} s ({np.mean(cpus):.1f} CPU s) "
        f"over {len(shapes)} shapes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(app.run(main))
