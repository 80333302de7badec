"""The shared type check: YAML values against annotations, and dataclasses built from mappings."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

import pytest

from mlgrpo.experiments.fields import FieldError, build_dataclass, closest, coerce, to_plain, type_name
from mlgrpo.experiments.source import ConfigError

P = ("training", "x")


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def reason(value, annotation) -> str:
    with pytest.raises(ConfigError) as info:
        coerce(value, annotation, P)
    assert info.value.path[:2] == P
    return info.value.reason


def test_canonical_forms():
    assert coerce(3, float, P) == 3.0 and isinstance(coerce(3, float, P), float)
    assert coerce([32, 64], tuple[int, ...], P) == (32, 64)
    assert coerce(None, int | None, P) is None
    assert coerce(3, int | float, P) == 3 and isinstance(coerce(3, int | float, P), int)
    assert coerce("red", Colour | str, P) == "red"
    assert coerce({"sw": 2}, dict[str, float], P) == {"sw": 2.0}


@pytest.mark.parametrize("value, annotation, expected", [
    ("fast", float, "expected a number, got the text 'fast' (write numbers without quotes)"),
    (True, int, "expected an integer, got true"),
    (1.5, int, "expected an integer, got 1.5"),
    (False, str, "expected text, got false (YAML reads yes/no/on/off as booleans: quote it)"),
    (float("inf"), float, "expected a finite number, got inf"),
    (float("nan"), float, "expected a finite number, got nan"),
    (2**70, int, f"{2**70} is too large (at most {2**63 - 1})"),
    ("en", list[str], "expected a list of text, got the text 'en'"),
    ([1, "x"], tuple[int, ...], "expected an integer, got the text 'x'"),
    ("nope", Literal["none", "all"], "expected one of 'none', 'all', got the text 'nope' (did you mean 'none'?)"),
    ("rde", Colour | str, "expected one of red, blue, got the text 'rde' (did you mean 'red'?)"),
    ({"a": 1}, int | None, "expected an integer or null, got a mapping"),
])
def test_kind_errors_say_what_was_expected(value, annotation, expected):
    assert reason(value, annotation) == expected


def test_error_points_at_the_list_item():
    with pytest.raises(ConfigError) as info:
        coerce([1, 2, "three"], list[int], P)
    assert info.value.path == (*P, 2)


def test_boolean_key_is_named():
    with pytest.raises(ConfigError) as info:
        coerce({False: 20}, dict[str, int], P)
    assert "quote the key" in info.value.reason and info.value.path == (*P, False)


@dataclass(frozen=True)
class Inner:
    size: int = 1

    def __post_init__(self):
        if self.size < 1:
            raise FieldError("size", f"must be >= 1, got {self.size}")


@dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner = Inner()
    edges: tuple[int, ...] = (1, 2)


def test_dataclass_from_mapping_with_nested_dataclass():
    built = build_dataclass(Outer, {"name": "a", "inner": {"size": 3}, "edges": [4]}, ("s",))
    assert built == Outer("a", Inner(3), (4,))
    assert to_plain(built) == {"name": "a", "inner": {"size": 3}, "edges": [4]}


def test_dataclass_errors_point_at_the_field():
    with pytest.raises(ConfigError) as info:
        build_dataclass(Outer, {"name": "a", "inner": {"size": 0}}, ("s",))
    assert info.value.path == ("s", "inner", "size") and info.value.reason == "must be >= 1, got 0"
    with pytest.raises(ConfigError) as info:
        build_dataclass(Outer, {"name": "a", "inerr": {}}, ("s",))
    assert info.value.path == ("s", "inerr")
    assert info.value.reason.startswith("unknown key 'inerr' in section 's' (did you mean 'inner'?)")
    with pytest.raises(ConfigError, match="name cannot be set here: it is fixed"):
        build_dataclass(Outer, {"name": "a"}, ("s",), exclude={"name": "it is fixed"})


def test_closest_and_type_name():
    assert closest("lerning_rate", ["learning_rate", "max_steps"]) == " (did you mean 'learning_rate'?)"
    assert closest("zzz", ["learning_rate"]) == ""
    assert type_name(tuple[float, ...] | None) == "a list of numbers or null"
