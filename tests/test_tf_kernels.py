"""tf_kernels: which kernels TensorFlow runs, as the formulations that depend on it see it."""

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from t2t_lite.tf_kernels import in_xla_context

# Prints whether TF runs oneDNN, then whether the attention's logits go row by row.
_PROBE = """
import tensorflow as tf
from t2t_lite.layers.attention_matmul import attention_matmul
from t2t_lite.tf_kernels import tf_uses_onednn
q = tf.zeros([1, 2, 8, 16])
graph = tf.function(lambda q: attention_matmul(q, q, True)).get_concrete_function(q).graph
print(tf_uses_onednn(), any(op.type == "BatchMatMulV2" and op.inputs[0].shape.rank == 5
                             for op in graph.get_operations()))
"""


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
        seen[key] = in_xla_context()
        return x

    tf.function(lambda x: probe(x, "xla"), jit_compile=True)(tf.constant(1.0))
    tf.function(lambda x: probe(x, "graph"))(tf.constant(1.0))
    assert seen == {"xla": True, "graph": False}
    assert not in_xla_context()  # eager
