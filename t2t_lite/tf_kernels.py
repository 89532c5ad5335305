"""Which kernels TensorFlow runs this process's ops with, for code that picks
between formulations of the same sums (`docs/design.md`, "Formulations chosen
for oneDNN on CPU")."""

from __future__ import annotations


def tf_uses_onednn() -> bool:
    """Whether TensorFlow runs this process's CPU ops as oneDNN kernels.

    `TF_ENABLE_ONEDNN_OPTS` decides; unset, TensorFlow on Linux turns them on
    for CPUs with AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX (an Intel Xeon
    with AMX, say) and off for others (an AVX2-only AMD EPYC). False where
    TensorFlow does not say.
    """
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:
        return False
    return bool(getattr(_pywrap_util_port, "IsMklEnabled", lambda: False)())


def in_xla_context() -> bool:
    """Whether the ops being traced now will be compiled by XLA
    (`jit_compile=True`, or a TPU computation). False where TensorFlow does
    not say."""
    try:
        import tensorflow as tf
        from tensorflow.python.ops import control_flow_util
    except ImportError:
        return False
    graph = tf.compat.v1.get_default_graph()
    return bool(control_flow_util.GraphOrParentsInXlaContext(graph))
