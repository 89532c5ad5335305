"""A command's output without TensorFlow's start-up lines.

Importing TensorFlow 2.21 writes native log lines to file descriptor 2
before its logging is set up (oneDNN's numerics note, "Could not find cuda
drivers", CPU-instruction advice), and `TF_CPP_MIN_LOG_LEVEL` does not reach
them. Creating the runtime then logs "failed call to cuInit" on every
machine without a GPU, and TF's Python logger writes warnings a user cannot
act on (one of them, on export, several thousand characters long). None of
it tells a user anything about their run, and it buries what does.

`quiet_tensorflow_start` imports TensorFlow with descriptor 2 pointed at a
temporary file, then writes back every captured line that is not such
start-up noise (an import error's traceback still shows); it sets
`TF_CPP_MIN_LOG_LEVEL=3` for TensorFlow's later native lines, and keeps
TensorFlow's and Keras' Python log records below ERROR out of absl's log
(TensorFlow logs through absl, as the commands do; their own progress is
absl logging too, and stays). `--verbosity=1` (absl's flag, or `-v 1`)
leaves everything as TensorFlow writes it. An inherited
`TF_CPP_MIN_LOG_LEVEL` is overridden: importing TensorFlow sets it to 1 in
its own process, so a command started from a Python program that imported
TensorFlow would otherwise inherit TensorFlow's choice, not a user's.
"""

from __future__ import annotations

import logging
import os
import re
import sys

from t2t_lite.native_stderr import filtered_native_stderr

# Lines TensorFlow writes while it loads: absl's pre-initialization banner,
# glog-style "I0000 00:00:... file.cc:N] ..." lines, and the second line of
# cpu_feature_guard's message.
STARTUP_NOISE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\)"
    r"|[IWE]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\]"
    r"|To enable the following instructions:)"
)
QUIET_NATIVE_LEVEL = "3"
LIBRARIES = (
    "tensorflow",
    "keras",
    "tf_keras",
)  # whose Python log records below ERROR are dropped  # TF_CPP_MIN_LOG_LEVEL: fatal lines only


def verbosity_requested(argv: list[str]) -> bool:
    """Whether `argv` raises absl's verbosity above its default (0).

    Example:
    >>> verbosity_requested(["t2t-lite-trainer", "--verbosity=1"]), verbosity_requested(["x"])
    (True, False)
    """
    for index, arg in enumerate(argv[1:], start=1):
        value = None
        for flag in ("--verbosity", "--v", "-v"):
            if arg.startswith(flag + "="):
                value = arg[len(flag) + 1 :]
            elif arg == flag and index + 1 < len(argv):
                value = argv[index + 1]
        if value is not None:
            try:
                return int(value) > 0
            except ValueError:
                return False  # absl reports the bad value when it parses the flags
    return False


def is_startup_noise(line: str) -> bool:
    """Whether `line` is one of TensorFlow's start-up log lines."""
    return bool(STARTUP_NOISE.match(line))


def quiet_tensorflow_start(argv: list[str] | None = None) -> None:
    """Imports TensorFlow without its start-up lines (see the module's doc).

    A no-op when TensorFlow is already imported (a test, a user's program)
    or when `argv` asks for verbosity.
    """
    argv = sys.argv if argv is None else argv
    if "tensorflow" in sys.modules or verbosity_requested(argv):
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = QUIET_NATIVE_LEVEL
    with filtered_native_stderr(is_startup_noise):
        import tensorflow  # noqa: F401  (the import is what is quieted)
    from absl import logging as absl_logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    absl_logging.get_absl_logger().addFilter(drop_library_chatter)


def drop_library_chatter(record: logging.LogRecord) -> bool:
    """A log filter: False for TensorFlow's and Keras' records below ERROR.

    Example:
    >>> record = logging.makeLogRecord({"pathname": "/x/tensorflow/python/a.py", "levelno": 20})
    >>> drop_library_chatter(record)
    False
    """
    quiet_source = any(f"{os.sep}{package}{os.sep}" in record.pathname for package in LIBRARIES)
    return record.levelno >= logging.ERROR or not quiet_source
