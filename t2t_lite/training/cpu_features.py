"""Whether this CPU computes in bfloat16 natively, from the flags Linux reports.

Without AVX512_BF16 or AMX-BF16, oneDNN emulates bfloat16 with conversions
around float32 arithmetic: `activation_dtype=bfloat16` then trains slower than
float32 (0.19x on an AVX2-only AMD EPYC in `scripts/bench.py`),
while on a CPU with those units it trains faster (1.35x on an AVX-512-BF16
EPYC). The trainer warns in the first case.
"""

from __future__ import annotations

# /proc/cpuinfo flags of the instructions oneDNN uses for bfloat16 matmuls.
BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(path: str = "/proc/cpuinfo") -> set[str] | None:
    """The first processor's flags in `path`, or None where it cannot be read
    (not Linux, or a sandbox without /proc)."""
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
    """True only when the flags are known and name none of `BF16_FLAGS`."""
    return flags is not None and not flags.intersection(BF16_FLAGS)


def bfloat16_warning(activation_dtype: str, on_cpu: bool, flags: set[str] | None) -> str | None:
    """The trainer's warning when bfloat16 activations would run emulated, else None."""
    if activation_dtype != "bfloat16" or not on_cpu or not lacks_bf16_units(flags):
        return None
    return (
        "activation_dtype=bfloat16 on a CPU without bfloat16 units (no "
        f"{' or '.join(BF16_FLAGS)} in /proc/cpuinfo): oneDNN emulates it, and training runs "
        "several times slower than in float32; train with activation_dtype=float32 here."
    )
