"""Broken data ends in one line on stderr and exit status 1: a truncated shard
(found by the manifest check before the first step), a shard damaged in place,
a --decode_from_file list that is not UTF-8. (A changed-hparams resume is in
test_trainer.py.)"""

import shutil

import pytest
import tensorflow as tf

from t2t_lite import registry, usr_dir
from t2t_lite.data import shards
from tests.helpers import run_command

PROBLEM = "broken_data_toy"


@pytest.fixture(scope="module")
def clean_data(toy_usr_dir, tmp_path_factory):
    usr_dir.import_usr_dir(toy_usr_dir)  # in-process too: datagen runs here directly
    path = tmp_path_factory.mktemp("clean_data")
    registry.problem(PROBLEM).generate_data(str(path), str(path / "tmp"))
    return path


@pytest.fixture
def data_dir(clean_data, tmp_path):
    """A private copy of the toy data, free to damage."""
    return shutil.copytree(clean_data, tmp_path / "data")


def test_truncated_shard_stops_the_trainer_before_the_first_step(
    toy_usr_dir, data_dir, tmp_path, user_stderr_lines
):
    shard = data_dir / f"{PROBLEM}-train-00001-of-00002"
    size = shard.stat().st_size
    shard.write_bytes(shard.read_bytes()[:-40])
    output_dir = tmp_path / "out"
    result = run_command(
        "t2t-lite-trainer",
        f"--t2t_usr_dir={toy_usr_dir}",
        f"--problem={PROBLEM}",
        "--hparams_set=transformer_tiny",
        f"--data_dir={data_dir}",
        f"--output_dir={output_dir}",
    )
    assert result.returncode == 1
    assert user_stderr_lines(result.stderr) == [
        f"t2t-lite-trainer: error: {shard} is truncated: {size - 40} bytes, but datagen "
        f"wrote {size} (see {data_dir / f'{PROBLEM}-train-manifest.json'}); rerun "
        f"t2t-lite-datagen --problem={PROBLEM} --data_dir={data_dir} --overwrite."
    ]
    assert not output_dir.exists()  # no hparams.json, no checkpoint: nothing started


def test_shard_damaged_in_place_is_named(toy_usr_dir, data_dir):
    """Same size, so the manifest passes; TF's DataLossError names no file,
    so the trainer and decoder look for the damaged shard."""
    from t2t_lite.cli import common

    shard = data_dir / f"{PROBLEM}-dev-00000-of-00001"
    damaged = bytearray(shard.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    shard.write_bytes(bytes(damaged))
    problem = registry.problem(PROBLEM)
    shards.check_shards(problem.require_data(str(data_dir), "dev"))  # the size is right
    error = tf.errors.DataLossError(None, None, "corrupted record at 0 [Op:IteratorGetNext]")
    message = str(common.damaged_data_error(problem, str(data_dir), ("train", "dev"), error))
    assert message.startswith(f"{shard} is damaged (corrupted record at ")
    fix = f"rerun t2t-lite-datagen --problem={PROBLEM} --data_dir={data_dir} --overwrite."
    assert message.endswith(fix)


def test_decode_list_that_is_not_utf8_is_one_line(
    toy_usr_dir, clean_data, tmp_path, user_stderr_lines
):
    listing = tmp_path / "inputs.txt"
    listing.write_bytes(b"0 1 1\n1 0\xff 1\n")  # Latin-1 ÿ on line 2
    result = run_command(
        "t2t-lite-decoder",
        f"--t2t_usr_dir={toy_usr_dir}",
        f"--problem={PROBLEM}",
        f"--data_dir={clean_data}",
        f"--output_dir={tmp_path / 'out'}",  # the list is read before any model
        f"--decode_from_file={listing}",
    )
    assert result.returncode == 1
    assert user_stderr_lines(result.stderr) == [
        f"t2t-lite-decoder: error: {listing} is not UTF-8: byte 0xff at line 2, column 4 "
        "(byte offset 9); save it as UTF-8 text, one input per line."
    ]
    assert not (tmp_path / "inputs.txt.decodes").exists()
