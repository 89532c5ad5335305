"""Importing t2t_lite selects TensorFlow's pooling (BFC) CPU allocator."""

import os
import subprocess
import sys

# A 32 MB element-wise op, ten times; prints page faults per op. With the
# default allocator each output is fresh memory from the OS (8,000 pages of
# faults per op); with the BFC pool, none after the first.
_FAULTS_PER_OP = """
import os, resource, sys
if sys.argv[1] == "import":
    import t2t_lite
import tensorflow as tf
print(os.environ.get("TF_CPU_ALLOCATOR_USE_BFC"))
x = tf.ones([8192, 1024])
add = tf.function(lambda x: x + x)
add(x)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    add(x)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
"""


def _run(mode, env=None):
    result = subprocess.run(
        [sys.executable, "-c", _FAULTS_PER_OP, mode],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    setting, faults = result.stdout.split()
    return setting, float(faults)


def test_importing_t2t_lite_pools_cpu_memory(monkeypatch):
    monkeypatch.delenv("TF_CPU_ALLOCATOR_USE_BFC", raising=False)
    setting, pooled = _run("import")
    assert setting == "true"
    assert pooled < 100
    # The control: without t2t_lite every op faults its output in again.
    setting, default = _run("no-import")
    assert setting == "None"
    assert default > 1000


def test_a_users_allocator_setting_wins():
    env = {**os.environ, "TF_CPU_ALLOCATOR_USE_BFC": "false"}
    setting, faults = _run("import", env)
    assert setting == "false"
    assert faults > 1000
