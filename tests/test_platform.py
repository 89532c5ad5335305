"""platform: the probes of what this process runs on (oneDNN, XLA context,
bfloat16 units, CPU replicas), as the choices that depend on them see them."""

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from t2t_lite import platform

# Prints whether TF runs oneDNN, then whether the attention's logits go row by row.
_PROBE = """
import tensorflow as tf
from t2t_lite.layers.attention_matmul import attention_matmul
from t2t_lite.platform import tf_uses_onednn
q = tf.zeros([1, 2, 8, 16])
graph = tf.function(lambda q: attention_matmul(q, q, True)).get_concrete_function(q).graph
print(tf_uses_onednn(), any(op.type == "BatchMatMulV2" and op.inputs[0].shape.rank == 5
                             for op in graph.get_operations()))
"""

AVX2_ONLY = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma\n\n"
WITH_AMX = "processor\t: 0\nflags\t\t: avx2 avx512f amx_tile amx_bf16\n"


@pytest.mark.parametrize("setting, expected", [("1", "True False"), ("0", "False True")])
def test_onednn_detection_follows_tf_enable_onednn_opts(setting, expected):
    """The choice between formulations reads TensorFlow's own switch."""
    result = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env={**os.environ, "TF_ENABLE_ONEDNN_OPTS": setting},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip().splitlines()[-1] == expected


def test_in_xla_context_inside_jit_compile_only():
    seen = {}

    def probe(x, key):
        seen[key] = platform.in_xla_context()
        return x

    tf.function(lambda x: probe(x, "xla"), jit_compile=True)(tf.constant(1.0))
    tf.function(lambda x: probe(x, "graph"))(tf.constant(1.0))
    assert seen == {"xla": True, "graph": False}
    assert not platform.in_xla_context()  # eager


def test_cpu_flags_reads_the_first_processor(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(AVX2_ONLY + AVX2_ONLY.replace("avx2", "avx512_bf16"))
    assert platform.cpu_flags(str(path)) == {"fpu", "sse2", "avx", "avx2", "fma"}


def test_cpu_flags_unreadable_or_flagless_is_unknown(tmp_path):
    assert platform.cpu_flags(str(tmp_path / "missing")) is None
    (tmp_path / "cpuinfo").write_text("processor\t: 0\n")
    assert platform.cpu_flags(str(tmp_path / "cpuinfo")) is None


def test_bfloat16_warning_only_for_emulated_bfloat16(tmp_path):
    (tmp_path / "avx2").write_text(AVX2_ONLY)
    (tmp_path / "amx").write_text(WITH_AMX)
    avx2, amx = (platform.cpu_flags(str(tmp_path / n)) for n in ("avx2", "amx"))
    warning = platform.bfloat16_warning("bfloat16", True, avx2)
    assert "without bfloat16 units" in warning and "activation_dtype=float32" in warning
    assert platform.bfloat16_warning("bfloat16", True, amx) is None
    assert platform.bfloat16_warning("float32", True, avx2) is None
    assert platform.bfloat16_warning("bfloat16", False, avx2) is None  # GPU, TPU
    assert platform.bfloat16_warning("bfloat16", True, None) is None  # flags unknown


def test_runs_on_cpu():
    assert platform.runs_on_cpu(tf.distribute.get_strategy())
    assert platform.runs_on_cpu(tf.distribute.OneDeviceStrategy("/cpu:0"))
