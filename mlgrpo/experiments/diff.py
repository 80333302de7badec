"""Pure functions over nested config dicts: an arm's overrides merged onto the shared sections, dotted
keys, and the keys whose values differ between arms.

Knows nothing about YAML, the schema, models or MLflow.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any


class _Absent:
    """The value of a key an arm does not have (its parent is null there, say): not the same as null."""

    def __repr__(self) -> str:
        return "(unset)"


ABSENT = _Absent()


def deep_merge(base: Mapping, override: Mapping) -> dict:
    """`override` over `base`: mappings merge key by key, anything else (lists, scalars, null) replaces.

    >>> deep_merge({"a": {"x": 1, "y": 2}, "l": [1, 2]}, {"a": {"y": 3}, "l": [9]})
    {'a': {'x': 1, 'y': 3}, 'l': [9]}
    """
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def leaf_paths(tree: Mapping, prefix: tuple = ()) -> list[tuple]:
    """The key path of every non-mapping value (an empty mapping counts as a value).

    >>> leaf_paths({"a": {"b": 1, "c": {}}, "d": None})
    [('a', 'b'), ('a', 'c'), ('d',)]
    """
    out = []
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            out += leaf_paths(value, (*prefix, key))
        else:
            out.append((*prefix, key))
    return out


def flatten(tree: Mapping, prefix: str = "") -> dict[str, Any]:
    """Dotted keys -> values. Lists of plain values stay one value; a list holding mappings is indexed.

    >>> flatten({"a": {"b": 1}, "langs": ["en", "sw"], "r": [{"name": "chrf", "w": 0.5}]})
    {'a.b': 1, 'langs': ['en', 'sw'], 'r.0.name': 'chrf', 'r.0.w': 0.5}
    """
    return {prefix + ".".join(map(str, path)): value for path, value in _paths(tree).items()}


def _paths(tree: Mapping, prefix: tuple = ()) -> dict[tuple, Any]:
    out: dict[tuple, Any] = {}
    for key, value in tree.items():
        path = (*prefix, key)
        if isinstance(value, Mapping) and value:
            out.update(_paths(value, path))
        elif isinstance(value, (list, tuple)) and any(isinstance(v, (Mapping, list, tuple)) for v in value):
            out.update(_paths({i: v for i, v in enumerate(value)}, path))
        else:
            out[path] = value
    return out


def differences(resolved: Mapping[str, Mapping]) -> list[tuple[str, dict[str, Any]]]:
    """(dotted key, {arm: value}) for every key whose value is not the same in all arms, in the order
    keys first appear (arm order, then config order). A key an arm lacks has the value ABSENT.

    Where one arm has a plain value and another a mapping (sampler: null against sampler: {name: ...}),
    the row is the whole value, not one row per inner key:

    >>> differences({"a": {"lr": 1, "s": {}}, "b": {"lr": 2, "s": {"sw": 4.0}}})
    [('lr', {'a': 1, 'b': 2}), ('s', {'a': {}, 'b': {'sw': 4.0}})]
    """
    flat = {arm: _paths(tree) for arm, tree in resolved.items()}
    leaves = {path for values in flat.values() for path in values}
    # A path that is a leaf in one arm and holds deeper keys in another is shown whole.
    whole = {path[:i] for path in leaves for i in range(1, len(path)) if path[:i] in leaves}
    rows: dict[tuple, None] = {}
    for values in flat.values():
        for path in values:
            rows[next((path[:i] for i in range(1, len(path) + 1) if path[:i] in whole), path)] = None
    out = []
    for path in rows:
        row = {arm: get_path(resolved[arm], path) for arm in resolved}
        if len({canonical(v) for v in row.values()}) > 1:
            out.append((".".join(map(str, path)), row))
    return out


def get_path(tree: Any, path: tuple) -> Any:
    """The value at a key path (list items by index), or ABSENT.

    >>> get_path({"r": [{"w": 1}]}, ("r", 0, "w")), get_path({"r": None}, ("r", "w"))
    (1, (unset))
    """
    for key in path:
        if isinstance(tree, Mapping) and key in tree:
            tree = tree[key]
        elif isinstance(tree, (list, tuple)) and isinstance(key, int) and 0 <= key < len(tree):
            tree = tree[key]
        else:
            return ABSENT
    return tree


def canonical(value: Any) -> str:
    """A value as compact JSON (sorted keys), for equality across arms and for hashing."""
    if value is ABSENT:
        return "\0absent"
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def show(value: Any) -> str:
    """A value as it would be written in the YAML file: null, true, 0.0002, [en, sw], chrf.

    >>> [show(v) for v in (None, True, 2e-4, ["en", "sw"], "chrf", ABSENT)]
    ['null', 'true', '0.0002', '[en, sw]', 'chrf', '-']
    """
    if value is ABSENT:
        return "-"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {show(v)}" for k, v in value.items()) + "}"
    return str(value)
