"""Importing t2t_lite selects TensorFlow's pooling (BFC) CPU allocator."""

import os
import subprocess
import sys

# Prints the allocator setting TF saw; whether the CPU device's allocator
# keeps statistics (the BFC pool does for every op output; TF's default
# malloc-based allocator keeps none, and on some machines refuses to be
# asked: AMD EPYC, 2026-11-25); and the page faults
# per 32 MB element-wise op, ten times.
_ALLOCATOR_PROBE = """
import os, resource, sys
if sys.argv[1] == "import":
    import t2t_lite
import tensorflow as tf
print(os.environ.get("TF_CPU_ALLOCATOR_USE_BFC"))
tf.function(lambda x: x * 2.0)(tf.ones([1001]))
try:
    print(tf.config.experimental.get_memory_info("CPU:0")["peak"] > 0)
except ValueError:  # "Allocator stats not available": TF's default allocator, on some machines
    print(False)
x = tf.ones([8192, 1024])
add = tf.function(lambda x: x + x)
add(x)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    add(x)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
"""


def _run(mode, env=None):
    """(TF_CPU_ALLOCATOR_USE_BFC as TF saw it, BFC in use, page faults per op)."""
    result = subprocess.run(
        [sys.executable, "-c", _ALLOCATOR_PROBE, mode],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    setting, pooled, faults = result.stdout.split()
    return setting, pooled == "True", float(faults)


def test_importing_t2t_lite_pools_cpu_memory(monkeypatch):
    monkeypatch.delenv("TF_CPU_ALLOCATOR_USE_BFC", raising=False)
    setting, pooled, faults = _run("import")
    assert (setting, pooled) == ("true", True)
    # The pool hands each op's output its freed block back: no page faults.
    # (Whether TF's default allocator faults depends on the machine's malloc:
    # 8,000 pages per op on 2026-11-24's AMD EPYC, none on 2026-11-25's Xeon.)
    assert faults < 100
    # The control: without t2t_lite, TF's default allocator.
    setting, pooled, _ = _run("no-import")
    assert (setting, pooled) == ("None", False)


def test_a_users_allocator_setting_wins():
    env = {**os.environ, "TF_CPU_ALLOCATOR_USE_BFC": "false"}
    setting, pooled, _ = _run("import", env)
    assert (setting, pooled) == ("false", False)
