"""Native libraries' lines on file descriptor 2, filtered.

TensorFlow and LiteRT write log lines from C++ straight to descriptor 2,
past Python's `sys.stderr` and its logging. `filtered_native_stderr` points
the descriptor at a temporary file for a block of code and writes back the
lines a predicate keeps, so a command's output starts with its own lines.
Python's own output in the block (a warning, an error's message) goes
through the same descriptor and is kept unless the predicate drops it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def filtered_native_stderr(is_noise: Callable[[str], bool]) -> Iterator[None]:
    """Within the block, lines written to descriptor 2 for which `is_noise`
    is true are dropped; the rest are written to stderr when the block ends.

    Example:
    >>> with filtered_native_stderr(lambda line: line.startswith("INFO: ")):
    ...     interpreter = Interpreter(model_path=path)  # doctest: +SKIP
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().decode("utf-8", "replace").splitlines(True)
            sys.stderr.write("".join(line for line in lines if not is_noise(line)))
            sys.stderr.flush()
