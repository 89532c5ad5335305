"""Tests for t2t_lite.usr_dir: a user's directory registers by name."""

import textwrap

import pytest

from t2t_lite import registry, usr_dir


def write(path, text):
    path.write_text(textwrap.dedent(text))


def test_package_dir_registers_problem_and_hparams(tmp_path):
    package = tmp_path / "my_usr_pkg"
    package.mkdir()
    write(package / "__init__.py", "from . import my_things\n")
    write(
        package / "my_things.py",
        """
        from t2t_lite import registry

        @registry.register_problem
        class UsrPackageProblem:
            pass

        @registry.register_hparams
        def usr_package_hparams():
            hparams = registry.hparams("transformer_tiny")
            hparams.hidden_size = 32
            return hparams
        """,
    )
    usr_dir.import_usr_dir(str(package))
    assert "usr_package_problem" in registry.list_problems()
    assert registry.hparams("usr_package_hparams").hidden_size == 32
    # A second import of the same directory is a no-op, not a duplicate error.
    usr_dir.import_usr_dir(str(package))


def test_plain_dir_imports_every_module(tmp_path):
    write(
        tmp_path / "plain_a.py",
        """
        from t2t_lite import registry

        @registry.register_hparams
        def usr_plain_hparams():
            return registry.hparams("transformer_tiny")
        """,
    )
    usr_dir.import_usr_dir(str(tmp_path))
    assert "usr_plain_hparams" in registry.list_hparams()


def test_failing_module_names_file_and_line(tmp_path):
    bad = tmp_path / "bad_usr"
    bad.mkdir()
    write(bad / "__init__.py", "from . import broken\n")
    write(bad / "broken.py", "x = 1\ny = undefined_name + 1\n")
    with pytest.raises(usr_dir.UsrDirError) as info:
        usr_dir.import_usr_dir(str(bad))
    message = str(info.value)
    assert f"{bad / 'broken.py'}:2" in message
    assert "NameError" in message


def test_syntax_error_names_file_and_line(tmp_path):
    bad = tmp_path / "syntax_usr"
    bad.mkdir()
    write(bad / "oops.py", "def f(:\n")
    with pytest.raises(usr_dir.UsrDirError, match=r"oops\.py:1 failed: SyntaxError"):
        usr_dir.import_usr_dir(str(bad))


def test_missing_or_empty_dir(tmp_path):
    with pytest.raises(usr_dir.UsrDirError, match="is not a directory"):
        usr_dir.import_usr_dir(str(tmp_path / "nope"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(usr_dir.UsrDirError, match="holds no Python files"):
        usr_dir.import_usr_dir(str(empty))
    usr_dir.import_usr_dir("")  # no flag given: nothing to do
