"""Every Python block of the README (and of docs/extending.md, which it points
to) that registers something runs as written, as a
user directory (`--t2t_usr_dir`): its own lines, the commands' registry, and
for a problem, datagen and a few training steps."""

import pathlib
import re
import sys

import pytest

from tests.helpers import run_command, train_with_commands, write_usr_dir

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The README and the guide it points to for writing a problem.
DOCUMENTS = [ROOT / "README.md", ROOT / "docs" / "extending.md"]
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_REGISTERED = re.compile(r"@registry\.register_(\w+)\n(?:class|def) (\w+)")


def _registering_blocks() -> list[str]:
    blocks = [block for path in DOCUMENTS for block in _BLOCK.findall(path.read_text())]
    return [block for block in blocks if "@registry.register_" in block]


def _snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_the_readme_has_hparams_and_problem_examples():
    kinds = {kind for block in _registering_blocks() for kind, _ in _REGISTERED.findall(block)}
    assert {"hparams", "problem"} <= kinds


@pytest.mark.parametrize("index", range(len(_registering_blocks())))
def test_readme_block_runs_as_a_user_directory(index, tmp_path):
    block = _registering_blocks()[index]
    usr = write_usr_dir(tmp_path / "usr", block)
    as_script = run_command(sys.executable, str(usr / "__init__.py"))
    assert as_script.returncode == 0, as_script.stderr[-3000:]
    names = [(kind, _snake_case(name)) for kind, name in _REGISTERED.findall(block)]
    listed = run_command("t2t-lite-trainer", f"--t2t_usr_dir={usr}", "--registry_help")
    assert listed.returncode == 0, listed.stderr[-3000:]
    for _, name in names:
        assert f"  {name}\n" in listed.stdout
    for _, problem in [n for n in names if n[0] == "problem"]:
        train_with_commands(
            usr,
            problem,
            tmp_path,
            "--hparams_set=transformer_tiny",
            "--hparams=batch_size=256",
            "--train_steps=2",
            "--iterations_per_loop=2",
        )


def test_every_hparams_set_and_problem_the_documents_name_is_registered():
    """A command line copied from the README names only what exists."""
    from t2t_lite import registry

    text = "\n".join(path.read_text() for path in DOCUMENTS)
    # What the documents' own blocks register, as a user directory would.
    own = {
        _snake_case(name)
        for block in _registering_blocks()
        for _, name in _REGISTERED.findall(block)
    }
    listings = {
        "hparams_set": registry.list_hparams(),
        "problem": registry.list_problems(),
    }
    for flag, registered in listings.items():
        # Placeholders (`--problem=languagemodel_<corpus>`) are not names.
        named = set(re.findall(rf"--{flag}=(\w+)(?![\w<])", text))
        assert len(named) >= 3, flag
        assert named <= set(registered) | own, sorted(named - set(registered) - own)
