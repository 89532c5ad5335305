"""The t2t-lite-* console scripts: flags, registry help, errors in one line."""

import json
import shutil

import pytest

from tests.helpers import run_command

COMMANDS = [
    "t2t-lite-trainer",
    "t2t-lite-datagen",
    "t2t-lite-decoder",
    "t2t-lite-exporter",
    "t2t-lite-avg-checkpoints",
    "t2t-lite-ngram",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_console_scripts_are_installed(command):
    assert shutil.which(command), f"{command} is not on PATH; reinstall the package"


def test_bad_hparams_value_is_one_line_naming_key_and_type():
    result = run_command(
        "t2t-lite-trainer", "--hparams_set=transformer_base", "--hparams=hidden_size=abc"
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == ("t2t-lite-trainer: error: hparam 'hidden_size' expects int, got 'abc'.")
    assert "Traceback" not in result.stderr


def test_registry_help_lists_user_registrations(toy_usr_dir):
    result = run_command("t2t-lite-trainer", f"--t2t_usr_dir={toy_usr_dir}", "--registry_help")
    assert result.returncode == 0, result.stderr
    assert "  librispeech_toy" in result.stdout
    assert "  cli_usr_hparams" in result.stdout
    assert "  transformer_librispeech_v2" in result.stdout


def test_misspelled_problem_suggests_close_name(toy_usr_dir):
    result = run_command(
        "t2t-lite-trainer",
        f"--t2t_usr_dir={toy_usr_dir}",
        "--hparams_set=cli_usr_hparams",
        "--problem=librispeach",
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("t2t-lite-trainer: error: unknown problem 'librispeach';")
    suggestions = [name.strip(" .") for name in last.split("closest registered:")[1].split(",")]
    assert "librispeech" in suggestions  # the real problem, not only the user's


def test_user_names_resolve_through_the_cli(toy_usr_dir, tmp_path):
    result = run_command(
        "t2t-lite-datagen",
        f"--t2t_usr_dir={toy_usr_dir}",
        "--problem=librispeech_toy",
        f"--data_dir={tmp_path}",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "librispeech_toy:\n  train: 20 examples written" in result.stdout
    assert (tmp_path / "librispeech_toy-train-00000-of-00001").exists()
    manifest = json.loads((tmp_path / "librispeech_toy-train-manifest.json").read_text())
    assert manifest["records"] == 20
    assert manifest["shards"] == [
        {
            "name": "librispeech_toy-train-00000-of-00001",
            "records": 20,
            "bytes": (tmp_path / "librispeech_toy-train-00000-of-00001").stat().st_size,
        }
    ]
    hparams = run_command(
        "t2t-lite-trainer",
        f"--t2t_usr_dir={toy_usr_dir}",
        "--problem=librispeech_toy",
        "--hparams_set=cli_usr_hparams",
        "--hparams=hidden_size=abc",
    )
    assert hparams.returncode == 1
    assert "hparam 'hidden_size' expects int" in hparams.stderr


def test_broken_usr_dir_names_file_and_line(tmp_path):
    (tmp_path / "broken.py").write_text("import os\nraise RuntimeError('boom')\n")
    result = run_command("t2t-lite-trainer", f"--t2t_usr_dir={tmp_path}", "--registry_help")
    assert result.returncode == 1
    assert f"{tmp_path / 'broken.py'}:2 failed: RuntimeError: boom" in result.stderr


def test_missing_required_flag_and_stray_args():
    result = run_command("t2t-lite-trainer", "--hparams=hidden_size=4")
    assert result.returncode == 1
    assert "--hparams_set is required." in result.stderr
    result = run_command("t2t-lite-decoder", "extra_word")
    assert result.returncode == 1
    assert "unexpected arguments ['extra_word']" in result.stderr


@pytest.mark.parametrize("command", ["t2t-lite-exporter", "t2t-lite-avg-checkpoints"])
def test_commands_need_an_output_dir(command):
    result = run_command(command)
    assert result.returncode == 1
    assert result.stderr.strip().endswith("--output_dir is required.")
