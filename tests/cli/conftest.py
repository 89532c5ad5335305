"""Helpers for the console-script tests."""

import re

import pytest

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
