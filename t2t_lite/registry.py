"""Name-based registries of problems, hparams sets and models.

Like Tensor2Tensor's `utils/registry.py`, but small and strict:

    from t2t_lite import registry

    @registry.register_hparams
    def my_transformer():           # registered as "my_transformer"
      hparams = registry.hparams("transformer_base")
      hparams.hidden_size = 256
      return hparams

    @registry.register_problem
    class MySpeechTask(...):        # registered as "my_speech_task"
      ...

Names default to the snake_case of the class or function name. Registering a
taken name is an error, and so is looking up an unknown name; that error names
the closest registered names. As in T2T, a registered problem class learns its
name (`registered_name`, which `Problem.name` returns, and which subclasses
inherit), and an hparams set must return an `HParams` (checked at lookup by
the check `hparam.py` installs). The built-in problems, hparams sets and models
are imported on the first lookup or listing, so `import t2t_lite` stays cheap.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable
from typing import Any

# The modules whose import registers t2t-lite's own entries, per kind. They
# are imported lazily (see `Registry._load_builtins`) because they import
# TensorFlow and build nothing until asked.
_BUILTIN_MODULES = {
    "problem": ("t2t_lite.problems",),
    "hparams set": ("t2t_lite.hparams",),
    "model": ("t2t_lite.models",),
}

_FIRST_CAP = re.compile(r"(.)([A-Z][a-z0-9]+)")
_ALL_CAP = re.compile(r"([a-z0-9])([A-Z])")


class RegistryError(ValueError):
    """A name was registered twice or looked up without being registered."""


def default_name(obj: Any) -> str:
    """Returns T2T's registry name for a class or function: its snake_case name.

    Example: `LibrispeechCleanSmall` -> `librispeech_clean_small`,
    `AlgorithmicReverseBinary40` -> `algorithmic_reverse_binary40`.
    """
    name = obj.__name__
    return _ALL_CAP.sub(r"\1_\2", _FIRST_CAP.sub(r"\1_\2", name)).lower()


def closest_names(name: str, candidates: list[str], limit: int = 3) -> list[str]:
    """Returns up to `limit` candidates closest to `name`, most similar first."""
    return difflib.get_close_matches(name, candidates, n=limit, cutoff=0.0)


class Registry:
    """A mapping from names to registered objects of one kind.

    Args:
        kind: what the registry holds, used in messages ("problem", ...).
        builtin_modules: modules imported on first use so that their
            decorators register t2t-lite's own entries.
        on_set: called as `on_set(name, obj)` after each registration
            (T2T's `on_set` hook).
    """

    def __init__(
        self,
        kind: str,
        builtin_modules: tuple[str, ...] = (),
        on_set: Callable[[str, Any], None] | None = None,
    ):
        self.kind = kind
        self._builtin_modules = builtin_modules
        self._builtins_loaded = not builtin_modules
        self._entries: dict[str, Any] = {}
        self._on_set = on_set

    def register(self, obj_or_name: Any = None) -> Any:
        """Decorator: `@reg.register`, `@reg.register()` or `@reg.register("name")`."""
        if obj_or_name is None or isinstance(obj_or_name, str):
            name = obj_or_name

            def decorator(obj: Any) -> Any:
                self._add(name or default_name(obj), obj)
                return obj

            return decorator
        self._add(default_name(obj_or_name), obj_or_name)
        return obj_or_name

    def _add(self, name: str, obj: Any) -> None:
        if name in self._entries:
            existing = self._entries[name]
            raise RegistryError(
                f"{self.kind} '{name}' is already registered (by "
                f"{existing.__module__}.{existing.__qualname__}); "
                "give the new one another name."
            )
        self._entries[name] = obj
        if self._on_set is not None:
            self._on_set(name, obj)

    def _load_builtins(self) -> None:
        # Set first: the imported modules call back into `register`, and a
        # failed import must not be retried into a duplicate-name error.
        if self._builtins_loaded:
            return
        self._builtins_loaded = True
        for module in self._builtin_modules:
            importlib.import_module(module)

    def get(self, name: str) -> Any:
        """Returns the object registered as `name`; unknown names suggest others."""
        self._load_builtins()
        if name not in self._entries:
            names = sorted(self._entries)
            suggestions = closest_names(name, names)
            hint = (
                f"; closest registered: {', '.join(suggestions)}"
                if suggestions
                else f"; no {self.kind} is registered"
            )
            raise RegistryError(f"unknown {self.kind} '{name}'{hint}.")
        return self._entries[name]

    def names(self) -> list[str]:
        """Sorted names of everything registered."""
        self._load_builtins()
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        self._load_builtins()
        return name in self._entries


def _name_the_problem(name: str, problem_class: Any) -> None:
    # T2T's `_on_problem_set`: the class answers to the name it was registered
    # under, even one that is not its snake_case.
    problem_class.registered_name = name


_PROBLEMS = Registry("problem", _BUILTIN_MODULES["problem"], on_set=_name_the_problem)
_HPARAMS = Registry("hparams set", _BUILTIN_MODULES["hparams set"])
_MODELS = Registry("model", _BUILTIN_MODULES["model"])

register_problem = _PROBLEMS.register
register_hparams = _HPARAMS.register
register_model = _MODELS.register


def problem(name: str) -> Any:
    """Returns a new instance of the problem registered as `name`."""
    return _PROBLEMS.get(name)()


# Set by `t2t_lite.hparam` (which imports this module, so it cannot be
# imported here): raises if an hparams set returned something else.
_hparams_check: Callable[[str, Any, Any], None] | None = None


def check_hparams_sets_with(check: Callable[[str, Any, Any], None]) -> None:
    """Installs `check(name, function, value)`, run on every `hparams(name)` result."""
    global _hparams_check
    _hparams_check = check


def hparams(name: str) -> Any:
    """Returns a fresh `HParams` from the hparams set registered as `name`."""
    function = _HPARAMS.get(name)
    value = function()
    if _hparams_check is not None:
        _hparams_check(name, function, value)
    return value


def model(name: str) -> Callable[..., Any]:
    """Returns the model class registered as `name`."""
    return _MODELS.get(name)


def list_problems() -> list[str]:
    return _PROBLEMS.names()


def list_hparams() -> list[str]:
    return _HPARAMS.names()


def list_models() -> list[str]:
    return _MODELS.names()


def help_string() -> str:
    """Everything registered, one section per kind (`--registry_help`)."""
    sections = []
    for title, names in (
        ("Problems", list_problems()),
        ("Models", list_models()),
        ("HParams sets", list_hparams()),
    ):
        body = "\n".join(f"  {name}" for name in names) or "  (none)"
        sections.append(f"{title}:\n{body}")
    return "\n".join(sections)
