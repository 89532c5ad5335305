"""`scripts/gpu_bench.py` on the CPU at its smallest size, so the GPU measurement cannot rot:
t2t-lite's model trains a step on Keras' JAX backend in a process that never imports TensorFlow.
Speed is not asserted (docs/design.md, "Tests and benchmarks")."""

import json
import math
import os
import subprocess
import sys

from tests.helpers import BLOCK_TENSORFLOW, SCRIPTS


def test_keras_jax_step_runs_without_tensorflow():
    command = [sys.executable, "-c", BLOCK_TENSORFLOW, str(SCRIPTS / "gpu_bench.py"),
               "--contender=keras_jax", "--model=speech", "--preset=smallest",
               "--device=cpu", "--steps=2"]  # fmt: skip
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert math.isfinite(result["loss"]) and result["loss"] > 0, result
    assert result["seconds_per_step"] > 0 and result["flops"] > 0, result
    assert "jax" in result["versions"], result
