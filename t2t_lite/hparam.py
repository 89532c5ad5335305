"""HParams: a small, strictly typed bag of named hyperparameters.

(The module is `hparam`, T2T's own name, because `t2t_lite.hparams` is the
package of registered hparams sets.)

Each hparam has a type fixed when it is added: `int`, `float`, `bool`, `str`,
or a list of one of those. Overrides are parsed from T2T's text form and
checked against those types:

    hparams = HParams(hidden_size=512, dropout=0.1, shared=True, dims=[1, 2])
    hparams.parse("hidden_size=256,dropout=0.2,shared=false,dims=[3,4]")
    hparams.parse("hidden_size=abc")
    # HParamsError: hparam 'hidden_size' expects int, got 'abc'.

A value of the wrong type, an unknown name or malformed text is an error that
names the hparam and the expected type. Unlike T2T, a string may be quoted so
that it can hold commas: `attention_dropout_broadcast_dims="0,1"`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from t2t_lite import registry
from t2t_lite.registry import closest_names

_SCALAR_TYPES = (int, float, bool, str)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INT = re.compile(r"^[+-]?\d+$")
_TRUE, _FALSE = ("true", "1"), ("false", "0")


class HParamsError(ValueError):
    """Bad hparams text, an unknown hparam or a value of the wrong type."""


def _type_name(value_type: type, is_list: bool) -> str:
    return f"list of {value_type.__name__}" if is_list else value_type.__name__


def _infer_type(name: str, value: Any) -> tuple[type, bool]:
    if isinstance(value, list | tuple):
        if not value:
            return str, True  # JSON cannot say more; see `add_hparam(value_type=)`.
        types = {type(item) for item in value}
        if types <= {int, float} and float in types:
            return float, True
        if len(types) == 1 and types <= set(_SCALAR_TYPES):
            return types.pop(), True
        raise HParamsError(f"hparam '{name}' must be a list of one of int, float, bool or str.")
    if type(value) in _SCALAR_TYPES:
        return type(value), False
    raise HParamsError(
        f"hparam '{name}' has unsupported type {type(value).__name__}; "
        "use int, float, bool, str or a list of those."
    )


def _coerce_scalar(name: str, value: Any, value_type: type, is_list: bool) -> Any:
    """Checks one already-typed value (from Python or JSON) against its type."""
    if value_type is float and type(value) in (int, float):
        return float(value)
    if type(value) is value_type:
        return value
    raise HParamsError(
        f"hparam '{name}' expects {_type_name(value_type, is_list)}, "
        f"got {type(value).__name__} {value!r}."
    )


def _coerce(name: str, value: Any, value_type: type, is_list: bool) -> Any:
    if is_list:
        if not isinstance(value, list | tuple):
            raise HParamsError(
                f"hparam '{name}' expects {_type_name(value_type, True)}, "
                f"got {type(value).__name__} {value!r}."
            )
        return [_coerce_scalar(name, item, value_type, True) for item in value]
    return _coerce_scalar(name, value, value_type, False)


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _parse_scalar(name: str, text: str, value_type: type, is_list: bool) -> Any:
    """Parses the text of one value as `value_type`."""
    text = text.strip()
    if value_type is str:
        return _unquote(text)
    if value_type is bool and text.lower() in _TRUE + _FALSE:
        return text.lower() in _TRUE
    if value_type is int and _INT.match(text):
        return int(text)
    if value_type is float:
        try:
            return float(text)
        except ValueError:
            pass
    raise HParamsError(f"hparam '{name}' expects {_type_name(value_type, is_list)}, got {text!r}.")


def _split_top_level(text: str) -> list[str]:
    """Splits on commas that are outside brackets and quotes."""
    pieces, depth, quote, start = [], 0, "", 0
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:index])
            start = index + 1
    if quote or depth:
        raise HParamsError(f"malformed hparams {text!r}: unbalanced brackets or quotes.")
    pieces.append(text[start:])
    return pieces


class HParams:
    """Named hyperparameters with fixed types.

    Args:
        **values: initial hparams; each one's type is taken from its value.

    Example:

    >>> hparams = HParams(hidden_size=512, layer_preprocess_sequence="n")
    >>> hparams.parse("hidden_size=256").hidden_size
    256
    """

    def __init__(self, **values: Any):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_types", {})
        for name, value in values.items():
            self.add_hparam(name, value)

    # -- adding, reading, setting ----------------------------------------------

    def add_hparam(self, name: str, value: Any, value_type: type | None = None) -> None:
        """Adds a new hparam; its type is `value_type` or inferred from `value`.

        `value_type` gives the element type of a list (needed for an empty one).
        """
        if not _NAME.match(name) or name.startswith("_"):
            raise HParamsError(f"hparam name {name!r} is not a valid identifier.")
        if name in self._values:
            raise HParamsError(f"hparam '{name}' already exists; set it instead.")
        if value is None:
            raise HParamsError(f"hparam '{name}' cannot be None: give a typed default value.")
        inferred, is_list = _infer_type(name, value)
        if value_type is not None and value_type not in _SCALAR_TYPES:
            raise HParamsError(f"hparam '{name}': value_type must be int, float, bool or str.")
        value_type = value_type or inferred
        self._types[name] = (value_type, is_list)
        self._values[name] = _coerce(name, value, value_type, is_list)

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(self._unknown_message(name))

    def __setattr__(self, name: str, value: Any) -> None:
        self.set_hparam(name, value)

    def set_hparam(self, name: str, value: Any) -> None:
        """Sets an existing hparam, checking the value against its type."""
        if name not in self._values:
            raise HParamsError(self._unknown_message(name) + " Use add_hparam to add a new one.")
        value_type, is_list = self._types[name]
        self._values[name] = _coerce(name, value, value_type, is_list)

    def del_hparam(self, name: str) -> None:
        if name not in self._values:
            raise HParamsError(self._unknown_message(name))
        del self._values[name]
        del self._types[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def type_of(self, name: str) -> str:
        """The type of `name` as text, e.g. "int" or "list of float"."""
        if name not in self._types:
            raise HParamsError(self._unknown_message(name))
        return _type_name(*self._types[name])

    def _unknown_message(self, name: str) -> str:
        suggestions = closest_names(name, sorted(self._values))
        hint = f" (closest: {', '.join(suggestions)})" if suggestions else ""
        return f"unknown hparam '{name}'{hint}."

    # -- overrides ---------------------------------------------------------------

    def parse(self, text: str) -> HParams:
        """Overrides hparams from T2T's text form "a=1,b=2.5,c=true,d=[1,2],e=foo".

        All assignments are checked before any is applied, so a bad string
        changes nothing. Returns self.
        """
        if not text or not text.strip():
            return self
        parsed: dict[str, Any] = {}
        for piece in _split_top_level(text):
            if not piece.strip():
                continue
            name, sep, value_text = piece.partition("=")
            name = name.strip()
            if not sep or not _NAME.match(name):
                raise HParamsError(f"malformed hparams {piece.strip()!r}: expected name=value.")
            if name in parsed:
                raise HParamsError(f"hparam '{name}' is assigned twice in {text!r}.")
            if name not in self._values:
                raise HParamsError(self._unknown_message(name))
            parsed[name] = self._parse_value(name, value_text.strip())
        self._values.update(parsed)
        return self

    def parse_names(self, text: str) -> list[str]:
        """The names assigned in override text (syntax checked, values not)."""
        names = []
        for piece in _split_top_level(text or ""):
            name, sep, _ = piece.partition("=")
            if piece.strip() and sep and _NAME.match(name.strip()):
                names.append(name.strip())
        return names

    def _parse_value(self, name: str, text: str) -> Any:
        value_type, is_list = self._types[name]
        if not is_list:
            return _parse_scalar(name, text, value_type, False)
        if not (text.startswith("[") and text.endswith("]")):
            raise HParamsError(
                f"hparam '{name}' expects {_type_name(value_type, True)} "
                f"written as [a,b,...], got {text!r}."
            )
        inner = text[1:-1].strip()
        items = _split_top_level(inner) if inner else []
        return [_parse_scalar(name, item, value_type, True) for item in items]

    def override_from_dict(self, values: Mapping[str, Any]) -> HParams:
        """Sets existing hparams from typed values (all checked first). Returns self."""
        checked = {}
        for name, value in values.items():
            if name not in self._values:
                raise HParamsError(self._unknown_message(name))
            checked[name] = _coerce(name, value, *self._types[name])
        self._values.update(checked)
        return self

    # -- views and serialization --------------------------------------------------

    def values(self) -> dict[str, Any]:
        """A copy of the hparams as a plain dict."""
        return {name: list(v) if isinstance(v, list) else v for name, v in self._values.items()}

    def keys(self) -> list[str]:
        return sorted(self._values)

    def copy(self) -> HParams:
        clone = HParams()
        for name in self._values:
            value_type, _ = self._types[name]
            clone.add_hparam(name, self._values[name], value_type)
        return clone

    def differences(self, other: HParams) -> list[str]:
        """Sorted names whose value or presence differs between self and other."""
        names = set(self._values) | set(other._values)
        return sorted(n for n in names if self.get(n) != other.get(n))

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self._values, indent=indent, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> HParams:
        """Builds HParams from `to_json` output; types come from the JSON values."""
        try:
            values = json.loads(text)
        except json.JSONDecodeError as error:
            raise HParamsError(f"hparams JSON is malformed: {error}.") from error
        if not isinstance(values, dict):
            raise HParamsError("hparams JSON must be an object of name: value.")
        return cls(**values)

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HParams) and self._values == other._values

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={self._values[k]!r}" for k in self.keys())
        return f"HParams({items})"


def create_hparams(hparams_set: str, overrides: str = "", problem=None) -> HParams:
    """Builds the registered set `hparams_set`, adds `problem`'s hparams, applies overrides.

    T2T's `trainer_lib.create_hparams`: the problem's own hparams (audio
    settings, ...) are added before `overrides` is parsed, so they can be
    overridden too; the problem then checks what it reads
    (`Problem.check_hparams`), so a bad value is reported before a run starts.
    """
    hparams = registry.hparams(hparams_set)
    if problem is None:
        return hparams.parse(overrides)
    problem.add_hparams(hparams)
    hparams.parse(overrides)
    problem.check_hparams(hparams)
    return hparams


def _check_hparams_set(name: str, function, value) -> None:
    if not isinstance(value, HParams):
        where = f"{function.__module__}.{function.__qualname__}"
        raise registry.RegistryError(
            f"hparams set '{name}' ({where}) returned {type(value).__name__}, not HParams; "
            "make it return the HParams it builds."
        )


registry.check_hparams_sets_with(_check_hparams_set)
