"""The benchmark suite (`scripts/bench.py`): it runs at its smallest size, so it cannot rot.

Speed is never asserted here (docs/design.md, "Tests and benchmarks"): only
that every comparison ran, every installed contender was measured in every
repetition, and the report and JSON are complete. Peers that are not
installed (the `bench` extra) are reported as skipped, and must really be
missing.
"""

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from tests.helpers import SCRIPTS, load_script, run_command

SCRIPT = SCRIPTS / "bench.py"
PEERS = {"PyTorch": "torch", "keras-hub": "keras_hub", "librosa": "librosa"}


def test_training_flops_count_every_matmul_by_hand():
    common = load_script("bench/common.py")
    sizes = common.make_sizes(
        hidden=4, filter=8, heads=2, encoder_layers=1, decoder_layers=1, vocab=10,
        batch=1, source_length=2, target_length=3,
    )  # fmt: skip
    # Encoder (2 positions): Q, K, V, O 4 x 2*2*4*4; scores and sums 2 x 2*2*2*4;
    # FFN 2 x 2*2*4*8.
    encoder = 4 * 64 + 2 * 32 + 2 * 128
    # Decoder (3 positions): self-attention 4 x 2*3*4*4 + 2 x 2*3*3*4; encoder
    # attention Q, O 2 x 2*3*4*4, K, V on 2 memory positions 2 x 2*2*4*4,
    # scores and sums 2 x 2*3*2*4; FFN 2 x 2*3*4*8.
    decoder = 4 * 96 + 2 * 72 + 2 * 96 + 2 * 64 + 2 * 48 + 2 * 192
    softmax = 2 * 3 * 4 * 10
    assert common.training_step_flops(sizes, speech=False) == 3 * (encoder + decoder + softmax)


def test_front_end_flops_follow_the_strided_shapes():
    common = load_script("bench/common.py")
    sizes = common.make_sizes(
        hidden=4, speech_seconds=0.08, mel_bins=9, speech_channels=3, front_end_filters=2
    )
    # 8 frames x 9 bins -> conv1 4 x 4 (27 taps, 2 filters) -> conv2 2 x 1
    # (18 taps) -> fold conv over 3 frames x 1 bin x 2 channels to 4.
    expected = 2 * 4 * 4 * 27 * 2 + 2 * 2 * 1 * 18 * 2 + 2 * 2 * 6 * 4
    assert common.front_end_flops(sizes) == (expected, 2)


def test_bad_flags_are_one_clear_sentence(tmp_path):
    result = run_command(
        sys.executable, str(SCRIPT), "--sections=decoding,nonsense", timeout=120, cwd=tmp_path
    )
    assert result.returncode == 2
    assert "--sections: a subset of training, decoding, pipeline" in result.stderr


def _check_rows(rows, reps, keys):
    """Every expected contender of every group has a row, measured `reps` times
    unless its library is really missing; no row failed."""
    assert {(row["group"], row["key"]) for row in rows} == keys
    for row in rows:
        assert not row.get("error"), row["error"]
        if row.get("skipped"):
            missing = [m for name, m in PEERS.items() if name in row["label"]]
            assert missing and importlib.util.find_spec(missing[0]) is None, row
            continue
        assert row["reps"] == reps == len(row["seconds"]), row
        rate = row["rate"] or row["gflops"]  # the matmul limit's rate is its GFLOP/s
        assert 0 < rate["min"] <= rate["median"] <= rate["max"], row


# Runs with whatever peers are installed: under CI's [test] install only
# t2t-lite and the plain Keras stack are measured, and the PyTorch, keras-hub
# and librosa rows must say "not installed" (checked by `_check_rows`).
@pytest.mark.slow
def test_smallest_run_measures_every_comparison(tmp_path):
    output = tmp_path / "out" / "bench.json"
    result = run_command(
        sys.executable, str(SCRIPT), "--size=smallest", "--profile", f"--output={output}",
        timeout=1200, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    results = json.loads(output.read_text())
    sizes = results["sizes"]
    assert results["machine"]["cpu"] and results["machine"]["cores"] >= 1
    flags = Path("/proc/cpuinfo").read_text().split()
    assert ("avx2" in results["machine"]["isa"]) == ("avx2" in flags)
    assert results["versions"]["tensorflow"] and results["versions"]["keras"]

    training = results["training"]
    common = ["t2t", "t2t_xla", "torch", "torch_passive", "keras", "hub", "hub_bfc"]
    keys = {("text", key) for key in common + ["matmul"]}
    keys |= {("speech", key) for key in common + ["t2t_bf16", "torch_bf16"]}
    _check_rows(training["rows"], sizes["reps"], keys)
    for row in training["rows"]:
        if not row.get("skipped"):
            assert row["memory"]["peak_rss_mb"] >= row["memory"]["baseline_rss_mb"] > 0, row
        if not row.get("skipped") and row["key"] != "matmul":
            assert all(math.isfinite(loss) for loss in row["loss"]), row  # bfloat16 too
            assert row["gflops"]["median"] > 0, row
    assert training["text"]["flops_per_step"] > 0 and training["speech"]["flops_per_step"] > 0

    lengths = sizes["decode_lengths"]
    keys = {(length, key) for length in lengths for key in ("cached", "uncached", "hub")}
    _check_rows(results["decoding"]["rows"], sizes["decode_reps"], keys)
    assert not any(any(row.get("eos_seen", [])) for row in results["decoding"]["rows"])
    keys = {(cores, key) for cores in (1, 2) for key in ("t2t", "logmel", "deltas")}
    _check_rows(results["pipeline"]["rows"], sizes["reps"], keys)

    goals = {goal["name"]: goal for goal in results["goals"]}
    assert goals["training text: t2t-lite / PyTorch (faster OpenMP setting)"]["goal"] == 1.3
    assert goals["training text: t2t-lite GFLOP/s / matmul limit"]["value"] > 0
    assert goals["training speech: t2t-lite bfloat16 / float32"]["value"] > 0
    for length in lengths:
        assert goals[f"decoding {length}: cached / uncached"]["value"] > 0
    for cores in (1, 2):
        assert f"featurization {cores} core(s): t2t-lite / librosa log-mel" in goals
    for table in (
        "Training, text inputs",
        "Training, speech inputs",
        "peak RSS, MiB (after imports)",
        "TF float32 matmul 64³ (the machine's limit)",
        "Decoding, beam 4",
        "Input pipeline",
        "| ratio | value | goal | met |",
        "| op type | self time (s) | share |",
    ):
        assert table in result.stdout  # fmt: skip
    assert sum(results["profile"]["op_seconds"].values()) > 0
    assert not (tmp_path / "bench_results.json").exists()  # --output was honoured
