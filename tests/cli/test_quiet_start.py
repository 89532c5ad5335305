"""TensorFlow's start-up lines are kept out of a command's output, and
`--verbosity` lets them through."""

import pytest

from t2t_lite.cli import quiet_start
from tests.helpers import LOAD_NOISE, assert_quiet_output, run_command

# Lines TF 2.21 wrote at import on a machine without a GPU.
TF_STARTUP = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795739420.116749   20720 port.cc:153] oneDNN custom operations are on.",
    "E0000 00:00:1795739423.093021   20720 cuda_platform.cc:52] failed call to cuInit: INTERNAL",
    "To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild",
]


@pytest.mark.parametrize("line", TF_STARTUP)
def test_startup_lines_are_noise(line):
    assert quiet_start.is_startup_noise(line)


@pytest.mark.parametrize(
    "line",
    ["t2t-lite-trainer: error: --hparams_set is required.", "I0000 is not a log line here"],
)
def test_other_lines_are_kept(line):
    assert not quiet_start.is_startup_noise(line)


@pytest.mark.parametrize(
    "argv, verbose",
    [
        (["cmd"], False),
        (["cmd", "--verbosity=1"], True),
        (["cmd", "--verbosity", "2"], True),
        (["cmd", "-v", "1"], True),
        (["cmd", "--v=0"], False),
        (["cmd", "--verbosity=-1"], False),
        (["cmd", "--verbosity=loud"], False),
    ],
)
def test_verbosity_requested(argv, verbose):
    assert quiet_start.verbosity_requested(argv) is verbose


def test_a_command_starts_quietly_and_verbosity_lets_tensorflow_speak():
    quiet = run_command("t2t-lite-trainer", "--registry_help")
    assert quiet.returncode == 0 and "transformer_speech_small" in quiet.stdout
    assert_quiet_output(quiet)
    loud = run_command("t2t-lite-trainer", "--registry_help", "--verbosity=1")
    assert loud.returncode == 0
    assert any(marker in loud.stderr for marker in LOAD_NOISE)


def test_an_error_still_reaches_the_user():
    result = run_command("t2t-lite-trainer", "--hparams=hidden_size=4")
    assert result.returncode == 1
    assert result.stderr.strip() == "t2t-lite-trainer: error: --hparams_set is required."


@pytest.mark.parametrize(
    "pathname, level, kept",
    [
        ("/site-packages/tensorflow/python/saved_model/signature_serialization.py", 20, False),
        ("/site-packages/keras/src/trainers/trainer.py", 30, False),
        ("/site-packages/tensorflow/python/eager/context.py", 40, True),
        ("/work/main/t2t_lite/training/trainer.py", 20, True),
    ],
)
def test_library_chatter_is_dropped_below_error(pathname, level, kept):
    record = quiet_start.logging.makeLogRecord({"pathname": pathname, "levelno": level})
    assert quiet_start.drop_library_chatter(record) is kept
