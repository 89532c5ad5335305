"""Helpers for the console-script tests."""

import re

import pytest

from tests.helpers import TINY_TRANSFORMER, problem_source, train_with_commands, write_usr_dir

# Lines TF and absl log on their own: "I0000 00:00:17954.. 123 file.cc:31] ..."
# (C++) and "I1123 15:33:01.831628 1399.. file.py:44] ..." (absl), the
# "before absl::InitializeLog()" notice, and the CPU-features note's second line.
_LOG_LINE = re.compile(
    r"^([IWEF]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ |WARNING: All log messages before absl"
    r"|To enable the following instructions:)"
)


def _user_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and not _LOG_LINE.match(line)]


@pytest.fixture
def user_stderr_lines():
    """stderr's lines without TF's and absl's log lines: what the command itself said."""
    return _user_lines


# TINY_TRANSFORMER on strings of at most 8 symbols, warmed up within a few steps.
TINY_TEXT_HPARAMS = f"{TINY_TRANSFORMER},batch_size=256,max_length=24,learning_rate_warmup_steps=10"


@pytest.fixture
def tiny_text_hparams():
    """The --hparams of `tiny_text_run`."""
    return TINY_TEXT_HPARAMS


IDENTITY_BINARY = "t2t_lite.problems.algorithmic.AlgorithmicIdentityBinary40"


@pytest.fixture(scope="session")
def toy_usr_dir(tmp_path_factory) -> str:
    """A user directory registering toy problems, identity over {0, 1}:
    `librispeech_toy` (a name near a built-in one) and `broken_data_toy`, 20
    train, 5 dev and 5 test examples in one train shard and in two;
    `tiny_binary`, see `tiny_text_run`; and the hparams set `cli_usr_hparams`."""
    toy_sizes = {"train": 20, "dev": 5, "test": 5}
    path = write_usr_dir(
        tmp_path_factory.mktemp("usr") / "toy_usr",
        problem_source(
            "LibrispeechToy",
            IDENTITY_BINARY,
            split_sizes=toy_sizes,
            num_shards={"train": 1, "dev": 1, "test": 1},
        ),
        problem_source(
            "BrokenDataToy",
            IDENTITY_BINARY,
            split_sizes=toy_sizes,
            num_shards={"train": 2, "dev": 1, "test": 1},
        ),
        problem_source(
            "TinyBinary",
            IDENTITY_BINARY,
            train_length=8,
            test_length=8,
            split_sizes={"train": 64, "dev": 6, "test": 7},
            num_shards={"train": 1, "dev": 1, "test": 2},
        ),
        """
        @registry.register_hparams
        def cli_usr_hparams():
            return registry.hparams("transformer_tiny")
        """,
    )
    return str(path)


@pytest.fixture(scope="session")
def tiny_text_run(toy_usr_dir, tmp_path_factory):
    """(usr_dir, data_dir, output_dir) of a 4-step text run (checkpoints 2 and 4,
    --keep_checkpoint_max=0) on `tiny_binary`: identity over {0, 1}, inputs of
    1-8 symbols, 7 test examples in 2 shards."""
    data_dir, output_dir = train_with_commands(
        toy_usr_dir,
        "tiny_binary",
        tmp_path_factory.mktemp("tiny_text"),
        "--hparams_set=transformer_tiny",
        f"--hparams={TINY_TEXT_HPARAMS}",
        "--train_steps=4",
        "--save_checkpoints_steps=2",
        "--iterations_per_loop=2",
        "--keep_checkpoint_max=0",
        "--random_seed=1",
    )
    return toy_usr_dir, data_dir, output_dir
