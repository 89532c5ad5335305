"""The benchmark suite (`scripts/bench.py`): it runs at its smallest size, so it cannot rot.

Speed is never asserted here (docs/design.md, "Tests and benchmarks"): only
that every comparison ran, every installed contender was measured in every
repetition, and the report and JSON are complete. Peers that are not
installed (the `bench` extra) are reported as skipped, and must really be
missing.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench.py"
PACKAGE = REPO / "scripts" / "bench"
PEERS = {"PyTorch": "torch", "keras-hub": "keras_hub", "librosa": "librosa"}


def load_bench(module: str):
    """Imports `scripts/bench/<module>.py` under a private package name
    (scripts/ is not an installed package and stays off sys.path)."""
    name = "t2t_lite_bench_under_test"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, PACKAGE / "__init__.py", submodule_search_locations=[str(PACKAGE)]
        )
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{name}.{module}")


def test_training_flops_count_every_matmul_by_hand():
    sizes = load_bench("sizes").Sizes(
        hidden=4, filter=8, heads=2, encoder_layers=1, decoder_layers=1, vocab=10,
        batch=1, source_length=2, target_length=3,
    )  # fmt: skip
    flops = load_bench("flops")
    # Encoder (2 positions): Q, K, V, O 4 x 2*2*4*4; scores and sums 2 x 2*2*2*4;
    # FFN 2 x 2*2*4*8.
    encoder = 4 * 64 + 2 * 32 + 2 * 128
    # Decoder (3 positions): self-attention 4 x 2*3*4*4 + 2 x 2*3*3*4; encoder
    # attention Q, O 2 x 2*3*4*4, K, V on 2 memory positions 2 x 2*2*4*4,
    # scores and sums 2 x 2*3*2*4; FFN 2 x 2*3*4*8.
    decoder = 4 * 96 + 2 * 72 + 2 * 96 + 2 * 64 + 2 * 48 + 2 * 192
    softmax = 2 * 3 * 4 * 10
    assert flops.training_step_flops(sizes, speech=False) == 3 * (encoder + decoder + softmax)


def test_front_end_flops_follow_the_strided_shapes():
    sizes = load_bench("sizes").Sizes(
        hidden=4, speech_seconds=0.08, mel_bins=9, speech_channels=3, front_end_filters=2
    )
    # 8 frames x 9 bins -> conv1 4 x 4 (27 taps, 2 filters) -> conv2 2 x 1
    # (18 taps) -> fold conv over 3 frames x 1 bin x 2 channels to 4.
    expected = 2 * 4 * 4 * 27 * 2 + 2 * 2 * 1 * 18 * 2 + 2 * 2 * 6 * 4
    assert load_bench("flops").front_end_flops(sizes) == (expected, 2)


def test_bad_sizes_are_one_clear_sentence(tmp_path):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--hidden=30", "--heads=4"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--hidden=30 must be divisible by --heads=4" in result.stderr


def _check_rows(rows, reps):
    for row in rows:
        assert not row.get("error"), row["error"]
        if row.get("skipped"):
            missing = [m for name, m in PEERS.items() if name in row["label"]]
            assert missing and importlib.util.find_spec(missing[0]) is None, row
            continue
        assert row["reps"] == reps, row
        assert row["rate"]["min"] > 0 and row["rate"]["min"] <= row["rate"]["max"], row


# Runs with whatever peers are installed: under CI's [test] install only
# t2t-lite and the plain Keras stack are measured, and the PyTorch, keras-hub
# and librosa rows must say "not installed" (checked by `_check_rows`).
@pytest.mark.slow
def test_smallest_run_measures_every_comparison(tmp_path):
    output = tmp_path / "out" / "bench.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--size=smallest", "--profile", f"--output={output}",
         f"--log_dir={tmp_path / 'logs'}"],
        capture_output=True, text=True, timeout=1200, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    results = json.loads(output.read_text())
    reps, decode_reps = results["sizes"]["reps"], results["sizes"]["decode_reps"]
    measured = {
        row["label"] for row in results["training"]["text"]["rows"] if not row.get("skipped")
    }
    assert any("plain Keras" in label for label in measured), measured

    for title in ("text", "speech"):
        section = results["training"][title]
        assert section["flops_per_step"] > 0
        _check_rows(section["rows"], reps)
        t2t = next(row for row in section["rows"] if row["key"] == "t2t")
        assert t2t["gflops"]["median"] > 0
        assert t2t["memory"]["peak_rss_mb"] >= t2t["memory"]["baseline_rss_mb"] > 0
    assert results["training"]["matmul"]["gflops"]["median"] > 0
    _check_rows(results["decoding"]["rows"], decode_reps)
    lengths = {row["length"] for row in results["decoding"]["rows"]}
    assert lengths == set(results["sizes"]["decode_lengths"])
    assert not any(row["eos_seen"] for row in results["decoding"]["rows"])
    _check_rows(results["pipeline"]["rows"], reps)
    assert {row["cores"] for row in results["pipeline"]["rows"]} == {1, 2}

    goals = {goal["name"]: goal for goal in results["goals"]}
    assert goals["training text: t2t-lite / PyTorch (faster OpenMP setting)"]["goal"] == 1.3
    assert goals["training text: t2t-lite GFLOP/s / matmul limit"]["value"] > 0
    for table in (
        "Training, text inputs",
        "Training, speech inputs",
        "Decoding, beam 4",
        "Input pipeline",
        "Peak resident memory",
        "| ratio | value | goal | met |",
    ):
        assert table in result.stdout  # fmt: skip
    assert not (tmp_path / "bench_results.json").exists()  # --output was honoured

    profiles = results["profile"]["results"]
    assert len(profiles) == 6, results["profile"]["lines"]
    for profile in profiles.values():
        assert sum(profile["op_seconds"].values()) > 0
    assert "| op type | self time (s) | share |" in result.stdout
