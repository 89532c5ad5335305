"""The distributed train step: same global batch, same loss, any strategy."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "mirrored_vs_default.py"


def test_mirrored_over_two_cpus_follows_the_default_loss_curve():
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    curves = json.loads(result.stdout.strip().splitlines()[-1])
    default, mirrored = curves["default"], curves["mirrored"]
    assert len(default["losses"]) == 6
    assert default["losses"][-1] < default["losses"][0]  # it trains
    assert mirrored["losses"] == pytest.approx(default["losses"], rel=1e-4)
    assert mirrored["checksum"] == pytest.approx(default["checksum"], rel=1e-5)
