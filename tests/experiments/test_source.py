"""Safe YAML with lines: tags, duplicate keys, alias bombs, 2e-4, and the file:line: key: reason shape."""

from __future__ import annotations

import time

import pytest

from mlgrpo.errors import UserError
from mlgrpo.experiments.source import dotted, parse_text, read_source

DOC = """\
name: demo
training:
  learning_rate: 2e-4
  max_steps: 10
rewards:
  rewards:
    - name: chrf
      weight: 0.5
"""


def test_every_key_path_has_its_line():
    source = parse_text(DOC, "demo.yaml")
    assert source.lines[("name",)] == 1
    assert source.lines[("training", "max_steps")] == 4
    assert source.lines[("rewards", "rewards", 0)] == 7
    assert source.lines[("rewards", "rewards", 0, "weight")] == 8
    # A key that is not in the file takes the line of its closest ancestor.
    assert source.line(("training", "beta")) == 2


def test_exponent_numbers_are_floats_as_people_mean_them():
    data = parse_text("a: 2e-4\nb: 1E5\nc: 1.0e-4\nd: e5\ne: '2e-4'\n", "x.yaml").data
    assert data == {"a": 0.0002, "b": 100000.0, "c": 0.0001, "d": "e5", "e": "2e-4"}


def test_error_is_one_line_with_file_line_and_key():
    source = parse_text(DOC, "demo.yaml")
    error = source.error(("rewards", "rewards", 0, "weight"), "too\nheavy")
    assert str(error) == "demo.yaml:8: rewards.rewards[0].weight: too heavy"


@pytest.mark.parametrize("tagged, shown", [
    ("!!python/object:os.system ls", "!!python/object:os.system"),
    ("!!python/name:os.system ''", "!!python/name:os.system"),
    ("!!set {a, b}", "!!set"),
    ("!!binary aGVsbG8=", "!!binary"),
    ("!custom 3", "!custom"),
])
def test_tags_other_than_plain_values_are_refused(tagged, shown):
    with pytest.raises(UserError) as info:
        parse_text(f"name: demo\nmodel:\n  policy: {tagged}\n", "t.yaml")
    assert str(info.value).startswith(f"t.yaml:3: model.policy: tag {shown} is not allowed")


def test_a_python_object_is_never_constructed(tmp_path, reliability):
    marker = tmp_path / "touched"
    text = f"x: !!python/object/apply:os.system ['touch {marker}']\n"
    with pytest.raises(UserError):
        parse_text(text, "evil.yaml")
    assert not marker.exists()
    reliability.record("security", "YAML !!python/object/apply tag refused, never constructed", "passed")


def test_unquoted_date_is_named():
    with pytest.raises(UserError, match=r"d.yaml:2: description: '2024-01-01' is read as a date .*; quote it"):
        parse_text("name: x\ndescription: 2024-01-01\n", "d.yaml")


def test_duplicate_keys_name_both_lines():
    with pytest.raises(UserError, match=r"^dup.yaml:3: training.beta: key 'beta' appears twice \(lines 2 and 3\)"):
        parse_text("training:\n  beta: 0.0\n  beta: 0.1\n", "dup.yaml")


def test_alias_bomb_is_refused_quickly():
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):  # 10**9 values once expanded
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    started = time.perf_counter()
    with pytest.raises(UserError, match="expands to more than 20000 values"):
        parse_text("\n".join(levels) + "\n", "bomb.yaml")
    assert time.perf_counter() - started < 2.0


def test_merge_keys_are_allowed_and_keep_lines():
    text = "base: &base\n  beta: 0.0\n  max_steps: 5\ntraining:\n  <<: *base\n  max_steps: 9\n"
    source = parse_text(text, "m.yaml")
    assert source.data["training"] == {"beta": 0.0, "max_steps": 9}
    assert source.lines[("training", "max_steps")] == 6
    assert source.lines[("training", "beta")] == 2  # where the merged value is written


@pytest.mark.parametrize("text, expected", [
    ("", r"e.yaml:1: \(top level\): the file is empty"),
    ("a: [1, 2\n", r"e.yaml:2: \(syntax\): not valid YAML"),
    ("a: 1\n---\nb: 2\n", r"e.yaml:\d+: \(syntax\): not valid YAML"),
    ("? [a, b]\n: 1\n", r"e.yaml:1: \(top level\): line 1: a key must be a plain name"),
])
def test_unparseable_documents(text, expected):
    with pytest.raises(UserError, match=expected):
        parse_text(text, "e.yaml")


def test_files_that_cannot_be_read(tmp_path):
    with pytest.raises(UserError, match="no such experiment file"):
        read_source(tmp_path / "missing.yaml")
    with pytest.raises(UserError, match="it is a folder"):
        read_source(tmp_path)
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes("description: café\n".encode("latin-1"))
    with pytest.raises(UserError, match=r"latin1.yaml:1: \(file\): not UTF-8 text"):
        read_source(latin)


def test_dotted():
    assert dotted(()) == "(top level)"
    assert dotted(("arms", "grpo", "training", "beta")) == "arms.grpo.training.beta"
    assert dotted(("rewards", "rewards", 2)) == "rewards.rewards[2]"
