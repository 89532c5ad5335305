"""The bfloat16-units check behind the trainer's warning."""

import tensorflow as tf

from t2t_lite.training import cpu_features
from t2t_lite.training.strategy import runs_on_cpu

AVX2_ONLY = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma\n\n"
WITH_AMX = "processor\t: 0\nflags\t\t: avx2 avx512f amx_tile amx_bf16\n"


def test_cpu_flags_reads_the_first_processor(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(AVX2_ONLY + AVX2_ONLY.replace("avx2", "avx512_bf16"))
    assert cpu_features.cpu_flags(str(path)) == {"fpu", "sse2", "avx", "avx2", "fma"}


def test_cpu_flags_unreadable_or_flagless_is_unknown(tmp_path):
    assert cpu_features.cpu_flags(str(tmp_path / "missing")) is None
    (tmp_path / "cpuinfo").write_text("processor\t: 0\n")
    assert cpu_features.cpu_flags(str(tmp_path / "cpuinfo")) is None


def test_bfloat16_warning_only_for_emulated_bfloat16(tmp_path):
    (tmp_path / "avx2").write_text(AVX2_ONLY)
    (tmp_path / "amx").write_text(WITH_AMX)
    avx2, amx = (cpu_features.cpu_flags(str(tmp_path / n)) for n in ("avx2", "amx"))
    warning = cpu_features.bfloat16_warning("bfloat16", True, avx2)
    assert "without bfloat16 units" in warning and "activation_dtype=float32" in warning
    assert cpu_features.bfloat16_warning("bfloat16", True, amx) is None
    assert cpu_features.bfloat16_warning("float32", True, avx2) is None
    assert cpu_features.bfloat16_warning("bfloat16", False, avx2) is None  # GPU, TPU
    assert cpu_features.bfloat16_warning("bfloat16", True, None) is None  # flags unknown


def test_runs_on_cpu():
    assert runs_on_cpu(tf.distribute.get_strategy())
    assert runs_on_cpu(tf.distribute.OneDeviceStrategy("/cpu:0"))
