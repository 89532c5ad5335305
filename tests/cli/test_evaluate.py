"""t2t-lite-trainer's evaluate and continuous_eval schedules read the run in
--output_dir (flags.json, hparams.json) as the decoder and exporter do;
--keep_checkpoint_max=0 keeps every checkpoint; --deterministic repeats a run."""

import os
import re
import shutil

import pytest
import tensorflow as tf

from tests.helpers import run_command


def _copy_of_run(tiny_text_run, tmp_path):
    _, _, output_dir = tiny_text_run
    copy = tmp_path / "run"
    shutil.copytree(output_dir, copy)
    return copy


def test_keep_checkpoint_max_0_keeps_every_checkpoint(tiny_text_run):
    _, _, output_dir = tiny_text_run  # trained with --keep_checkpoint_max=0
    state = tf.train.get_checkpoint_state(str(output_dir))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == ["ckpt-2", "ckpt-4"]


@pytest.mark.parametrize(
    "flag, message",
    [
        ("--keep_checkpoint_max=-1", "--keep_checkpoint_max must be 0 (keep all) or more."),
        (
            "--inter_op_parallelism_threads=-2",
            "--inter_op_parallelism_threads must be 0 (TF's choice) or more, got -2.",
        ),
    ],
)
def test_a_negative_count_flag_is_one_line(flag, message, user_stderr_lines):
    result = run_command("t2t-lite-trainer", flag)
    assert result.returncode == 1
    assert user_stderr_lines(result.stderr) == [f"t2t-lite-trainer: error: {message}"]


def test_evaluate_without_a_checkpoint_is_an_error_and_writes_nothing(
    tiny_text_run, tmp_path, user_stderr_lines
):
    _, _, output_dir = tiny_text_run
    empty = tmp_path / "no_checkpoint"
    empty.mkdir()
    for name in ("hparams.json", "flags.json"):
        shutil.copy(output_dir / name, empty / name)
    for where in (empty, tmp_path / "mistyped"):
        result = run_command("t2t-lite-trainer", "--schedule=evaluate", f"--output_dir={where}")
        assert result.returncode == 1
        assert user_stderr_lines(result.stderr) == [
            f"t2t-lite-trainer: error: --output_dir {where} holds no checkpoint to evaluate; "
            "pass the output directory of a t2t-lite-trainer run (or train first)."
        ]
    assert sorted(os.listdir(empty)) == ["flags.json", "hparams.json"]
    assert not (tmp_path / "mistyped").exists()


def test_evaluate_takes_the_run_from_output_dir(tiny_text_run, tmp_path, user_stderr_lines):
    output_dir = _copy_of_run(tiny_text_run, tmp_path)
    flags_before = (output_dir / "flags.json").read_text()
    args = ["t2t-lite-trainer", "--schedule=evaluate", f"--output_dir={output_dir}"]
    wrong = run_command(*args, "--problem=algorithmic_reverse_binary40")
    assert wrong.returncode == 1
    assert user_stderr_lines(wrong.stderr)[-1].startswith(
        "t2t-lite-trainer: error: --problem=algorithmic_reverse_binary40 does not match the run"
    )
    # No --problem, --hparams_set, --hparams or --data_dir: all from the run.
    result = run_command(
        *args, "--eval_steps=1", "--eval_decode_examples=2", "--save_checkpoints_steps=1"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"eval at step 4: ", result.stderr)
    assert (
        "t2t-lite-trainer: warning: --save_checkpoints_steps is ignored by t2t-lite-trainer."
        in user_stderr_lines(result.stderr)
    )
    assert (output_dir / "flags.json").read_text() == flags_before  # the run's, kept


def test_continuous_eval_stops_after_eval_timeout_mins(tiny_text_run, tmp_path):
    output_dir = _copy_of_run(tiny_text_run, tmp_path)
    result = run_command(
        "t2t-lite-trainer",
        "--schedule=continuous_eval",
        f"--output_dir={output_dir}",
        "--eval_steps=1",
        "--eval_decode_examples=2",
        "--eval_timeout_mins=0.01",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(re.findall(r"eval at step 4: ", result.stderr)) == 1
    assert "for 0.01 min (--eval_timeout_mins); stopping." in result.stderr


def test_deterministic_runs_with_one_seed_give_the_same_weights(
    tiny_text_run, tiny_text_hparams, tmp_path
):
    usr, data_dir, _ = tiny_text_run
    checksums = []
    for name in ("first", "second"):
        result = run_command(
            "t2t-lite-trainer",
            f"--t2t_usr_dir={usr}",
            "--problem=tiny_binary",
            f"--data_dir={data_dir}",
            f"--output_dir={tmp_path / name}",
            "--hparams_set=transformer_tiny",
            f"--hparams={tiny_text_hparams}",
            "--train_steps=12",
            "--iterations_per_loop=4",
            "--schedule=train",
            "--random_seed=5",
            "--deterministic",
        )
        assert result.returncode == 0, result.stderr[-3000:]
        checksums.append(re.search(r"final weights checksum: (\S+)", result.stdout).group(1))
    assert checksums[0] == checksums[1]
