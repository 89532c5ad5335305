"""What this process runs on, and the choices t2t-lite makes for it.

Every platform probe is found here, each with the choice it feeds:

- `tf_uses_onednn`: whether TensorFlow runs CPU ops as oneDNN kernels.
  The delta-delta filters (`data/audio_features.add_delta_deltas`) then run
  as a `conv1d` over each mel bin's frames, because oneDNN's depthwise
  convolution is far slower than TensorFlow's own; with TensorFlow's
  kernels they run as that depthwise convolution. The attention's batched
  matmuls (`layers/attention_matmul`) go row by row only with TensorFlow's
  own kernel, whose batched matmul threads small products badly; under
  oneDNN the plain batched matmul is faster than the rows.
- `in_xla_context`: whether the ops being traced will be compiled by XLA.
  XLA emits its own dot kernels, so the reason for the attention's rows
  (TensorFlow's batched-matmul kernel) does not hold there and it stays
  plain.
- `cpu_flags`, `lacks_bf16_units`, `bfloat16_warning`: whether this CPU
  computes in bfloat16 natively. Without AVX512_BF16 or AMX-BF16, oneDNN
  emulates bfloat16 with conversions around float32 arithmetic, and
  `activation_dtype=bfloat16` trains several times slower than float32
  (docs/benchmarks.md, "bfloat16"); t2t-lite-trainer warns then.
- `runs_on_cpu`: whether a strategy's replicas run on a CPU (the bfloat16
  warning is about CPUs only).

The two kernel probes live in `layers/tf_kernels.py`: the attention asks
them while it is traced, and `layers` imports nothing else of t2t-lite.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.layers.tf_kernels import in_xla_context, tf_uses_onednn

__all__ = [
    "BF16_FLAGS",
    "bfloat16_warning",
    "cpu_flags",
    "in_xla_context",
    "lacks_bf16_units",
    "runs_on_cpu",
    "tf_uses_onednn",
]

# /proc/cpuinfo flags of the instructions oneDNN uses for bfloat16 matmuls.
BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(path: str = "/proc/cpuinfo") -> set[str] | None:
    """The first processor's flags in `path`.

    Args:
        path: a Linux `cpuinfo` file.

    Returns:
        The flags as a set, or None where they cannot be read (not Linux,
        or a sandbox without /proc).

    Example:
    >>> cpu_flags("/no/such/cpuinfo") is None
    True
    """
    try:
        with open(path, encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() == "flags":
                    return set(value.split())
    except OSError:
        return None
    return None


def lacks_bf16_units(flags: set[str] | None) -> bool:
    """True only when the flags are known and name none of `BF16_FLAGS`.

    Example:
    >>> lacks_bf16_units({"avx2", "fma"}), lacks_bf16_units({"amx_bf16"}), lacks_bf16_units(None)
    (True, False, False)
    """
    return flags is not None and not flags.intersection(BF16_FLAGS)


def bfloat16_warning(activation_dtype: str, on_cpu: bool, flags: set[str] | None) -> str | None:
    """The trainer's warning when bfloat16 activations would run emulated.

    Args:
        activation_dtype: the run's `activation_dtype` hparam.
        on_cpu: whether the replicas run on a CPU (`runs_on_cpu`).
        flags: the CPU's flags (`cpu_flags`), or None when unknown.

    Returns:
        The warning, or None when there is nothing to warn about.

    Example:
    >>> bfloat16_warning("float32", True, {"avx2"}) is None
    True
    """
    if activation_dtype != "bfloat16" or not on_cpu or not lacks_bf16_units(flags):
        return None
    return (
        "activation_dtype=bfloat16 on a CPU without bfloat16 units (no "
        f"{' or '.join(BF16_FLAGS)} in /proc/cpuinfo): oneDNN emulates it, and training runs "
        "several times slower than in float32; train with activation_dtype=float32 here."
    )


def runs_on_cpu(strategy: tf.distribute.Strategy) -> bool:
    """True when every replica of `strategy` runs on a CPU.

    Example:
    >>> runs_on_cpu(tf.distribute.OneDeviceStrategy("/cpu:0"))
    True
    """
    try:
        devices = strategy.extended.worker_devices
    except RuntimeError:
        # The default strategy names no devices: TF places ops on an accelerator if there is one.
        return not any(tf.config.list_logical_devices(kind) for kind in ("GPU", "TPU"))
    return all(tf.DeviceSpec.from_string(device).device_type == "CPU" for device in devices)
