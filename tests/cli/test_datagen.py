"""t2t-lite-datagen: writes shards, keeps existing ones, reports, fails clearly."""

import subprocess


def run(*args):
    return subprocess.run(["t2t-lite-datagen", *args], capture_output=True, text=True, timeout=600)


def test_writes_then_keeps_shards(tmp_path):
    data_dir = tmp_path / "data"
    result = run(
        "--problem=algorithmic_identity_binary40",
        f"--data_dir={data_dir}",
        f"--tmp_dir={tmp_path / 'raw'}",
    )
    assert result.returncode == 0, result.stderr
    assert "train: 100000 examples written, 0 skipped" in result.stdout
    assert len(list(data_dir.glob("algorithmic_identity_binary40-train-*-of-00010"))) == 10
    assert not list(data_dir.glob("*.incomplete"))
    again = run("--problem=algorithmic_identity_binary40", f"--data_dir={data_dir}")
    assert again.returncode == 0
    assert "train: shards exist, kept (--overwrite to regenerate)" in again.stdout


def test_unknown_problem_and_missing_flag(tmp_path):
    result = run("--problem=algorithmic_revers_binary40", f"--data_dir={tmp_path}")
    assert result.returncode == 1
    assert "closest registered: algorithmic_reverse_binary40" in result.stderr
    result = run("--problem=algorithmic_identity_binary40")
    assert result.returncode == 1
    assert result.stderr.strip().endswith("--data_dir is required.")
