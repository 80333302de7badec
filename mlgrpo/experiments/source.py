"""Reading an experiment file: safe YAML only, with the line of every key kept for error messages.

    text -> compose (SafeLoader) -> walk the node tree: refuse tags, duplicate keys, non-text keys,
    runaway alias expansion; note each key's line -> construct plain dicts, lists and scalars

Only the standard scalar, list and mapping tags are accepted: `!!python/object` and every other tag
(`!!set`, `!!binary`, custom `!foo`, and unquoted dates, which YAML 1.1 turns into date objects) is an
error naming its line. `2e-4` is read as a number: YAML 1.1 wants `2.0e-4`, and a learning rate that
silently becomes the string "2e-4" is a classic trap. Errors are `ConfigError(path, reason)` until
`Source.error` adds the file and line.
Knows nothing about what the keys mean (that is the schema's business), nor about models or MLflow.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mlgrpo.errors import UserError

# A valid experiment has a few hundred values; a file that expands (through aliases) to far more is a
# "billion laughs" document or a mistake, and walking it would hang validation.
MAX_VALUES = 20_000
MAX_DEPTH = 40
_SCALAR_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null")}
_SEQ, _MAP, _MERGE = "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map", "tag:yaml.org,2002:merge"
_PLAIN_KEY = re.compile(r"[\w.+-]+")
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")


class ConfigError(Exception):
    """A problem at a key path; the loader turns it into a UserError with the file and line."""

    def __init__(self, path: Sequence, reason: str):
        super().__init__(reason)
        self.path, self.reason = tuple(path), reason


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads 1e-4 and 2E+3 as floats (add_implicit_resolver copies the table)."""


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789."))


def dotted(path: Sequence) -> str:
    """A key path as people write it: training.learning_rate, rewards.rewards[1].weight.

    >>> dotted(("rewards", "rewards", 1, "weight"))
    'rewards.rewards[1].weight'
    """
    out = ""
    for key in path:
        if isinstance(key, int) and not isinstance(key, bool):
            out += f"[{key}]"
        elif isinstance(key, str) and _PLAIN_KEY.fullmatch(key):
            out += f".{key}" if out else key
        else:  # a key with spaces, colons, line breaks or of another type: quoted, so the message stays one line
            out += f"[{key!r}]"
    return out or "(top level)"


@dataclass(frozen=True)
class Source:
    """A parsed experiment file: its data and the 1-based line of each key path."""

    path: str
    data: Any
    lines: Mapping[tuple, int]  # key path ("rewards", "rewards", 1, "weight") -> line

    def line(self, path: Sequence) -> int:
        """The line of `path`, or of its closest ancestor that has one (a missing key: its section)."""
        path = tuple(path)
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)

    def error(self, path: Sequence, reason: str) -> UserError:
        """The one-line message people see: file:line: key: reason."""
        reason = " ".join(str(reason).split())  # library messages may span lines; ours never do
        return UserError(f"{self.path}:{self.line(path)}: {dotted(path)}: {reason}")


def read_source(path: str | Path) -> Source:
    """Read and parse `path`; every problem is a UserError naming the file and line."""
    shown = str(path)
    file = Path(path)
    if not file.is_file():
        hint = "it is a folder; name the .yaml file inside" if file.is_dir() else "check the path"
        raise UserError(f"{shown}:1: (file): no such experiment file ({hint})")
    try:
        text = file.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{shown}:1: (file): not UTF-8 text ({exc.reason} at byte {exc.start}); "
                        "save the file as UTF-8") from None
    return parse_text(text, shown)


def parse_text(text: str, shown: str) -> Source:
    """Parse experiment YAML held in a string; `shown` is the name used in messages."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise UserError(f"{shown}:1: (top level): the file is empty; an experiment needs name, model, data, "
                            "rewards, arms and seeds")
        walker = _Walker(loader, node)
        try:
            walker.walk(node, ())
        except ConfigError as exc:
            raise Source(shown, None, walker.lines).error(exc.path, exc.reason) from None
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = " ".join(filter(None, (exc.context, exc.problem)))
        raise UserError(f"{shown}:{line}: (syntax): not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{shown}:1: (syntax): not valid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise UserError(f"{shown}:1: (syntax): the document is nested too deeply to be an experiment") from None
    finally:
        loader.dispose()
    return Source(shown, data, walker.lines)


class _Walker:
    """Checks every node (tags, keys, size) and records the line of each key path."""

    def __init__(self, loader: yaml.SafeLoader, root: yaml.Node):
        self.loader, self.count = loader, 0
        self.lines: dict[tuple, int] = {(): root.start_mark.line + 1}

    def walk(self, node: yaml.Node, path: tuple) -> None:
        self.count += 1
        if self.count > MAX_VALUES or len(path) > MAX_DEPTH:
            raise ConfigError(path, f"the file expands to more than {MAX_VALUES} values or {MAX_DEPTH} levels "
                                    "(through YAML aliases?); an experiment is far smaller")
        expected = {yaml.ScalarNode: _SCALAR_TAGS, yaml.SequenceNode: {_SEQ}, yaml.MappingNode: {_MAP}}[type(node)]
        if node.tag not in expected:
            raise ConfigError(path, _tag_reason(node))
        if isinstance(node, yaml.ScalarNode):
            self.scalar(node, path)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.lines.setdefault((*path, index), item.start_mark.line + 1)
                self.walk(item, (*path, index))
        elif isinstance(node, yaml.MappingNode):
            self.walk_mapping(node, path, merged=False)

    def scalar(self, node: yaml.ScalarNode, path: tuple) -> Any:
        """The value of a scalar node; an explicit `!!int abc` or `!!bool maybe` fails here, with its place."""
        try:
            return self.loader.construct_object(node)
        except (ValueError, KeyError, TypeError):
            raise ConfigError(path, f"{node.value!r} is not a valid {_short(node.tag)}") from None

    def walk_mapping(self, node: yaml.MappingNode, path: tuple, merged: bool) -> None:
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if key_node.tag == _MERGE:  # `<<: *base`: the merged keys belong to this mapping
                for part in value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]:
                    if not isinstance(part, yaml.MappingNode):
                        raise ConfigError(path, f"line {line}: `<<` must merge a mapping")
                    self.walk_mapping(part, path, merged=True)
                continue
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _SCALAR_TAGS:
                raise ConfigError(path, f"line {line}: a key must be a plain name, not a list, mapping or tagged value")
            # The key as Python will see it (`no` is False, `1` is 1), so that lookups by path find it.
            key = self.scalar(key_node, path)
            if key in seen:
                self.lines[(*path, key)] = line  # point at the second one: that is where the file went wrong
                raise ConfigError((*path, key), f"key {key_node.value!r} appears twice (lines {seen[key]} and "
                                                f"{line}); YAML would silently keep the last one")
            seen[key] = line
            if merged:
                self.lines.setdefault((*path, key), line)
            else:
                self.lines[(*path, key)] = line
            self.walk(value_node, (*path, key))


def _short(tag: str) -> str:
    return tag.replace("tag:yaml.org,2002:", "!!")


def _tag_reason(node: yaml.Node) -> str:
    tag = _short(node.tag)
    if tag == "!!timestamp":
        return f"{node.value!r} is read as a date (an unquoted date, or the tag !!timestamp); quote it if it is text"
    return (f"tag {tag} is not allowed: experiment files are read as safe YAML (mappings, lists, text, numbers, "
            "booleans, null); remove the tag")
