"""YAML values against typed fields: the type check every section shares, and dataclasses built from mappings.

`coerce(value, annotation, path)` accepts what YAML can produce for a field's annotation (int, float,
bool, str, None, list, tuple, dict, Literal, Enum, unions of them, nested dataclasses) and returns the
value in canonical form (an int given for a float field becomes a float, a list for a tuple field a
tuple), or raises ConfigError at the exact key path. Value ranges and combinations stay with each
config's own `__post_init__`; this module checks only kinds. It is used for mlgrpo's own dataclasses
and for TRL's GRPOConfig and peft's LoraConfig fields, which their constructors do not type-check
(GRPOConfig takes learning_rate="fast" and LoraConfig bias="nope" without a word).
Knows nothing about experiments, models or MLflow.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.experiments.source import ConfigError
from mlgrpo.registry import did_you_mean

class FieldError(UserError):
    """Raised by a config's own checks about one of its fields, so that the message can point at its line."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


# Integers travel into numpy and torch (int64); a larger one is a typo or a fuzzer.
MAX_INT = 2**63 - 1
_UNION_TYPES = (typing.Union, types.UnionType)


def closest(word: Any, choices: Iterable[str]) -> str:
    """" (did you mean 'x'?)" for the closest valid name, or "" when none is close.

    >>> closest("lerning_rate", ["learning_rate", "max_steps"])
    " (did you mean 'learning_rate'?)"
    """
    match = did_you_mean(word, choices)  # mlgrpo.registry's rule, the one every registry uses
    return f" (did you mean {match!r}?)" if match else ""


def describe(value: Any) -> str:
    """What a YAML value is, for messages: "the text 'abc'", "a list", "true"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, (int, float)):
        return repr(value)
    return {dict: "a mapping", list: "a list", tuple: "a list"}.get(type(value), type(value).__name__)


def check_mapping(value: Any, path: tuple, what: str = "a mapping of keys") -> Mapping:
    """`value` as a mapping with text keys, or ConfigError (with the YAML boolean trap named)."""
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"expected {what}, got {describe(value)}")
    for key in value:
        if not isinstance(key, str):
            hint = " (YAML reads yes/no/on/off as booleans: quote the key, e.g. 'no')" if isinstance(key, bool) else ""
            raise ConfigError((*path, key), f"key {describe(key)} is not text{hint}")
    return value


def reject_unknown(value: Mapping, valid: Iterable[str], path: tuple, what: str) -> None:
    valid = list(valid)
    for key in value:
        if key not in valid:
            raise ConfigError((*path, key), f"unknown key {key!r} in {what}{closest(key, valid)}; "
                                            f"valid keys: {', '.join(valid)}")


def coerce(value: Any, annotation: Any, path: tuple) -> Any:
    """`value` checked against `annotation` and in canonical form; ConfigError names the path."""
    result = _coerce(value, annotation, path)
    if result is _MISMATCH:
        hint = _bool_hint(value, annotation)
        raise ConfigError(path, f"expected {type_name(annotation)}, got {describe(value)}{hint}")
    return result


_MISMATCH = object()


def _coerce(value: Any, annotation: Any, path: tuple) -> Any:
    """The coerced value, or _MISMATCH when `value` is not of the annotation's kind (ranges raise)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any or annotation is object:
        return value
    if annotation is None or annotation is type(None):
        return None if value is None else _MISMATCH
    if origin in _UNION_TYPES:
        return _union(value, args, path)
    if origin is typing.Literal:
        if value in args and not (isinstance(value, bool) and not any(isinstance(a, bool) for a in args)):
            return value
        raise ConfigError(path, f"expected one of {', '.join(map(repr, args))}, got {describe(value)}"
                                f"{closest(value, [str(a) for a in args]) if isinstance(value, str) else ''}")
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return build_dataclass(annotation, value, path) if isinstance(value, Mapping) else _MISMATCH
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum(value, annotation, path)
    if origin in (list, tuple, Sequence) or annotation in (list, tuple):
        return _sequence(value, origin or annotation, args, path)
    if origin in (dict, Mapping) or annotation is dict:
        return _dict(value, args, path)
    return _scalar(value, annotation, path)


def _scalar(value: Any, annotation: Any, path: tuple) -> Any:
    if annotation is bool:
        return value if isinstance(value, bool) else _MISMATCH
    if isinstance(value, bool):
        return _MISMATCH  # True is an int in Python, never in a config
    if annotation is int:
        if not isinstance(value, int):
            return _MISMATCH
        if abs(value) > MAX_INT:
            raise ConfigError(path, f"{value} is too large (at most {MAX_INT})")
        return value
    if annotation is float:
        if not isinstance(value, (int, float)):
            return _MISMATCH
        if (isinstance(value, int) and abs(value) > MAX_INT) or not math.isfinite(value):
            raise ConfigError(path, f"expected a finite number, got {value!r}")
        return float(value)
    if annotation is str:
        return value if isinstance(value, str) else _MISMATCH
    if isinstance(annotation, type):
        # A library type YAML cannot spell (accelerate's ParallelismConfig, a callable): not settable here.
        return value if isinstance(value, annotation) else _MISMATCH
    return value  # an annotation this checker does not know: the config's own checks apply


def _union(value: Any, args: tuple, path: tuple) -> Any:
    enums = [a for a in args if isinstance(a, type) and issubclass(a, enum.Enum)]
    if enums and isinstance(value, str):  # `SchedulerType | str`: the text must name a member
        return _enum(value, enums[0], path)
    first_error = None
    for arg in sorted(args, key=_try_order):
        try:
            result = _coerce(value, arg, path)
        except ConfigError as exc:
            first_error = first_error or exc
            continue
        if result is not _MISMATCH:
            return result
    if first_error is not None:
        raise first_error
    return _MISMATCH


def _try_order(annotation: Any) -> int:
    """Try bool before int and int before float, so that 3 stays an int where both are allowed."""
    return {type(None): 0, bool: 1, int: 2, float: 3}.get(annotation, 4)


def _enum(value: Any, kind: type[enum.Enum], path: tuple) -> Any:
    names = [str(member.value) for member in kind]
    if isinstance(value, str) and value in names:
        return value
    raise ConfigError(path, f"expected one of {', '.join(names)}, got {describe(value)}{closest(value, names)}")


def _sequence(value: Any, kind: Any, args: tuple, path: tuple) -> Any:
    if not isinstance(value, (list, tuple)):
        return _MISMATCH
    if kind is tuple and len(args) == 2 and args[1] is Ellipsis:
        item_types = [args[0]] * len(value)
    elif kind is tuple and args:
        if len(args) != len(value):
            raise ConfigError(path, f"expected a list of {len(args)} values, got {len(value)}")
        item_types = list(args)
    else:
        item_types = [args[0] if args else Any] * len(value)
    pairs = enumerate(zip(value, item_types, strict=True))
    items = [coerce(item, item_type, (*path, i)) for i, (item, item_type) in pairs]
    return tuple(items) if kind is tuple else items


def _dict(value: Any, args: tuple, path: tuple) -> Any:
    if not isinstance(value, Mapping):
        return _MISMATCH
    key_type, value_type = args if len(args) == 2 else (Any, Any)
    if key_type is str:
        check_mapping(value, path)
    return {key: coerce(item, value_type, (*path, key)) for key, item in value.items()}


def type_name(annotation: Any) -> str:
    """How a person would say the type: "a number", "a list of text", "text or null"."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in _UNION_TYPES:
        return " or ".join(dict.fromkeys(type_name(a) for a in args))
    if origin in (list, tuple) or annotation in (list, tuple):
        return f"a list of {_plural(type_name(args[0]))}" if args else "a list"
    if origin in (dict, Mapping) or annotation is dict:
        return "a mapping"
    names = {int: "an integer", float: "a number", bool: "true or false", str: "text", type(None): "null"}
    if annotation in names:
        return names[annotation]
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return "a mapping"
    return getattr(annotation, "__name__", str(annotation))


def _plural(name: str) -> str:
    return {"an integer": "integers", "a number": "numbers", "text": "text"}.get(name, name)


def _bool_hint(value: Any, annotation: Any) -> str:
    if isinstance(value, bool) and "text" in type_name(annotation):
        return " (YAML reads yes/no/on/off as booleans: quote it)"
    if isinstance(value, str) and "number" in type_name(annotation) and value.strip():
        return " (write numbers without quotes)"
    return ""


def build_dataclass(cls: type, value: Any, path: tuple, *, exclude: Mapping[str, str] | None = None) -> Any:
    """An instance of dataclass `cls` from a YAML mapping: unknown keys, kinds, then the class's own checks.

    `exclude` maps field names YAML may not set to the reason why. A UserError from the class's
    `__post_init__` becomes a ConfigError at `path`.
    """
    check_mapping(value, path)
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    for key, why in (exclude or {}).items():
        if key in value:
            raise ConfigError((*path, key), f"{key} cannot be set here: {why}")
    reject_unknown(value, [n for n in names if n not in (exclude or {})], path, _section_name(path))
    kwargs = {key: coerce(item, hints[key], (*path, key)) for key, item in value.items()}
    try:
        return cls(**kwargs)
    except FieldError as exc:
        raise ConfigError((*path, exc.field), exc.reason) from None
    except UserError as exc:
        raise ConfigError(*_field_of(str(exc), path, names)) from None


def _field_of(message: str, path: tuple, names: list[str]) -> tuple[tuple, str]:
    """A class's own message that names one of its fields first ("update.epochs must be ...") points at
    that field's line; any other message at the section's."""
    section = path[-1] if path and isinstance(path[-1], str) else None
    match = re.match(rf"{re.escape(section)}\.(\w+):? ", message) if section else None
    if match and match[1] in names:
        return (*path, match[1]), message[match.end():]
    return path, message


def _section_name(path: tuple) -> str:
    return f"section {path[-1]!r}" if path and isinstance(path[-1], str) else "this mapping"


def to_plain(value: Any) -> Any:
    """Dataclasses, tuples and mappings as JSON-ready dicts and lists (for resolved configs and hashes)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value
