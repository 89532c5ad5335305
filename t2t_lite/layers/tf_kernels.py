"""Which kernels TensorFlow runs the ops being traced with, and whether XLA compiles them.

The kernels are oneDNN's or TensorFlow's own.

The attention asks these while it is traced (`attention_matmul`), so they
live in `layers`, which imports nothing else of t2t-lite; `t2t_lite.platform`
imports them beside the other platform probes and says what each choice is.
TensorFlow has no public API for either answer, hence the private modules,
each behind an ImportError fallback.
"""

from __future__ import annotations


def tf_uses_onednn() -> bool:
    """Whether TensorFlow runs this process's CPU ops as oneDNN kernels.

    `TF_ENABLE_ONEDNN_OPTS` decides; unset, TensorFlow on Linux turns them on
    for CPUs with AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX and off for
    others (AVX2-only CPUs, for instance).

    Returns:
        The switch TensorFlow itself reads (`IsMklEnabled`), or False where
        TensorFlow does not say.

    Example:
    >>> isinstance(tf_uses_onednn(), bool)
    True
    """
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:
        return False
    return bool(getattr(_pywrap_util_port, "IsMklEnabled", lambda: False)())


def in_xla_context() -> bool:
    """Whether the ops being traced now will be compiled by XLA.

    XLA compiles them under `jit_compile=True`, or in a TPU computation.

    Returns:
        True inside an XLA context; False in eager code, in a plain
        `tf.function`, or where TensorFlow does not say.

    Example:
    >>> in_xla_context()  # eager
    False
    """
    try:
        import tensorflow as tf
        from tensorflow.python.ops import control_flow_util
    except ImportError:
        return False
    graph = tf.compat.v1.get_default_graph()
    return bool(control_flow_util.GraphOrParentsInXlaContext(graph))
