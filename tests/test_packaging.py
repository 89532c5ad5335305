"""The wheel installs problems/ and hparams/ only inside the t2t_lite package."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_wheel_nests_problems_and_hparams(tmp_path):
    source = tmp_path / "src"
    # Build from a copy so the build leaves nothing in the working tree.
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", "build", "dist", "*.egg-info", "__pycache__", "tests"
        ),
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = (tmp_path / "dist").glob("t2t_lite-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert "problems" not in tops and "hparams" not in tops, tops
    assert "t2t_lite/problems/__init__.py" in names
    assert "t2t_lite/hparams/__init__.py" in names
    assert "t2t_lite/hparams/librispeech.py" in names
    assert "t2t_lite/registry.py" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    for command in [
        "t2t-lite-trainer",
        "t2t-lite-datagen",
        "t2t-lite-decoder",
        "t2t-lite-exporter",
        "t2t-lite-avg-checkpoints",
        "t2t-lite-ngram",
    ]:
        assert f"{command} = " in text
