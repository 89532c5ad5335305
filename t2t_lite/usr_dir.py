"""Imports a user's directory so that what it registers is usable by name.

T2T's `--t2t_usr_dir`: a directory of Python modules that register problems,
hparams sets or models with `t2t_lite.registry`. A directory with an
`__init__.py` is imported as a package (its `__init__` imports the rest, as in
T2T); a directory without one has each of its `*.py` files imported.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import traceback
from types import ModuleType


class UsrDirError(ImportError):
    """The user directory is missing or one of its files failed to import."""


def _module_name(dir_path: str) -> str:
    # A private prefix keeps user modules from shadowing or being shadowed by
    # installed packages; the path's hash tells apart two dirs of one name.
    base = re.sub(r"\W", "_", os.path.basename(dir_path))
    digest = hashlib.sha1(dir_path.encode()).hexdigest()[:8]
    return f"t2t_usr_dir_{base}_{digest}"


def _failure_location(error: BaseException, dir_path: str) -> str:
    """Returns "file:line" of the innermost frame inside the user directory."""
    if isinstance(error, SyntaxError) and error.filename:
        return f"{error.filename}:{error.lineno}"
    location = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename).startswith(dir_path + os.sep):
            location = f"{frame.filename}:{frame.lineno}"
    return location or dir_path


def _exec_module(name: str, path: str, search_locations: list[str] | None) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=search_locations
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def import_usr_dir(usr_dir: str | None) -> None:
    """Imports `usr_dir` (no-op for None/""); errors name the file and line.

    Raises:
        UsrDirError: the directory does not exist, or importing it failed.
    """
    if not usr_dir:
        return
    dir_path = os.path.abspath(os.path.expanduser(usr_dir)).rstrip(os.sep)
    if not os.path.isdir(dir_path):
        raise UsrDirError(f"--t2t_usr_dir {usr_dir!r} is not a directory.")
    package = _module_name(dir_path)
    if package in sys.modules:
        return  # Already imported: registering twice would be an error.
    init_file = os.path.join(dir_path, "__init__.py")
    try:
        if os.path.exists(init_file):
            _exec_module(package, init_file, [dir_path])
        else:
            files = sorted(f for f in os.listdir(dir_path) if f.endswith(".py"))
            if not files:
                raise UsrDirError(f"--t2t_usr_dir {usr_dir!r} holds no Python files to import.")
            for filename in files:
                _exec_module(f"{package}_{filename[:-3]}", os.path.join(dir_path, filename), None)
    except UsrDirError:
        raise
    except Exception as error:  # noqa: BLE001 - any user error is reported the same way
        where = _failure_location(error, dir_path)
        message = str(error).splitlines()[0] if str(error) else ""
        raise UsrDirError(
            f"--t2t_usr_dir: importing {where} failed: {type(error).__name__}: {message}"
        ) from error
