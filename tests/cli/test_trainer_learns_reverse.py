"""t2t-lite-trainer learns a task end to end: `algorithmic_reverse_binary40`
with `transformer_algorithmic_tiny`, from datagen (`--generate_data`) to a
dev sequence accuracy of real greedy decoding >= 0.99 over the whole dev
split (1,000 sequences of 1-40 symbols)."""

import json
import subprocess

import pytest

TRAIN_STEPS = 6000


@pytest.mark.slow
def test_reverse_binary40_reaches_dev_sequence_accuracy_099(tmp_path):
    output_dir = tmp_path / "run"
    result = subprocess.run(
        [
            "t2t-lite-trainer",
            "--problem=algorithmic_reverse_binary40",
            "--hparams_set=transformer_algorithmic_tiny",
            "--generate_data",
            f"--data_dir={tmp_path / 'data'}",
            f"--tmp_dir={tmp_path / 'tmp'}",
            f"--output_dir={output_dir}",
            f"--train_steps={TRAIN_STEPS}",
            f"--local_eval_frequency={TRAIN_STEPS}",
            f"--save_checkpoints_steps={TRAIN_STEPS}",
            "--eval_decode_examples=1000",
            "--random_seed=1",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = (output_dir / "eval_results.jsonl").read_text().splitlines()
    final = json.loads(lines[-1])
    assert final["step"] == TRAIN_STEPS
    assert final["decode_sequence_accuracy"] >= 0.99, final
