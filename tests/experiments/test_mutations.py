"""Property: no edit of a valid experiment file ends in a traceback; every failure is a UserError whose
message is one line, `file:line: key: reason`, with a line that exists in the file.

Edits: unknown keys, wrong types, missing sections and keys, extreme numbers, wrong nesting (a value
wrapped in a list or mapping, a section moved elsewhere), and YAML tags such as !!python/object.
"""

from __future__ import annotations

import pytest

import copy
import re

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlgrpo.errors import UserError
from mlgrpo.experiments import load_experiment
from mlgrpo.experiments.source import parse_text

from .conftest import QUICKSTART

BASE = parse_text(QUICKSTART, "quickstart.yaml").data
TAGS = ("!!python/object:os.system", "!!python/object/apply:os.system", "!!python/name:os.system", "!!set",
        "!!binary", "!!timestamp", "!!omap", "!custom", "!!str", "!!int", "!!float")
# Names that exist somewhere in the schema, so that misplaced (not only misspelt) keys are tried.
KNOWN = ("name", "policy", "lora", "suite", "file", "languages", "per_language", "sampler", "oversample", "rewards",
         "weight", "per_language", "training", "num_generations", "learning_rate", "seed", "arms", "algorithm",
         "advantage", "std_scope", "estimator", "metrics", "every_steps", "workers", "model", "data", "r")


def all_paths(tree, prefix=()):
    out = [prefix]
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for key, value in items:
        out += all_paths(value, (*prefix, key))
    return out


PATHS = all_paths(BASE)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["", "tiny", "tiny:seed=x", "grpo", "ppo", "gae", "en", "sw", "no", "2e-4", "-1", "auto",
                     "numbers", "balanced", "oversample", "language", "exact_match", "Qwen/Qwen2.5-0.5B"]),
    st.sampled_from([0, 1, -1, 2, 7, 8, 64, 10**6, 2**63, 1e-300, 1e300, 0.5]),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.sampled_from(KNOWN), scalars, max_size=2))


def get(tree, path):
    for key in path:
        tree = tree[key]
    return tree


@st.composite
def edited_documents(draw):
    doc = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        paths = all_paths(doc)
        path = draw(st.sampled_from(paths))
        kind = draw(st.sampled_from(["set", "delete", "add", "wrap", "move"]))
        parent = get(doc, path[:-1]) if path else None
        if kind == "set" and path:
            parent[path[-1]] = draw(values)
        elif kind == "delete" and path:
            del parent[path[-1]]
        elif kind == "add":
            target = get(doc, path)
            if isinstance(target, dict):
                target[draw(st.one_of(st.sampled_from(KNOWN), st.text(min_size=1, max_size=10)))] = draw(values)
        elif kind == "wrap" and path:
            parent[path[-1]] = draw(st.sampled_from([[parent[path[-1]]], {"value": parent[path[-1]]}]))
        elif kind == "move" and path:
            source = draw(st.sampled_from(paths))
            if source[: len(path)] != path:  # not into itself
                parent[path[-1]] = copy.deepcopy(get(doc, source))
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    if draw(st.booleans()):  # a tag in front of one value
        lines = text.splitlines()
        candidates = [i for i, line in enumerate(lines) if re.match(r"^\s*[\w-]+: \S", line)]
        if candidates:
            i = draw(st.sampled_from(candidates))
            key, _, value = lines[i].partition(": ")
            lines[i] = f"{key}: {draw(st.sampled_from(TAGS))} {value}"
            text = "\n".join(lines) + "\n"
    return text


TRIED = {"edits": 0, "refused": 0}  # examples tried and refused, for reports/reliability.md


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=edited_documents())
def test_edits_give_a_one_line_error_or_a_valid_experiment(tmp_path_factory, text):
    TRIED["edits"] += 1
    path = tmp_path_factory.mktemp("mutated") / "exp.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_experiment(path)
    except UserError as exc:
        TRIED["refused"] += 1
        message = str(exc)
        assert "\n" not in message and "Traceback" not in message
        match = re.match(rf"{re.escape(str(path))}:(\d+): (\S[^\n]*?): (\S.*)$", message)
        assert match, message
        assert 1 <= int(match[1]) <= text.count("\n") + 1, message


@pytest.mark.slow  # with the property test it records (slow: it runs hundreds of edits)
def test_zz_record_what_the_mutations_tried(reliability):
    """Runs after the property test above (file order): what it tried, for reports/reliability.md. It fails
    when the property test did not run first (this test alone, or a -k that left it out): then there is
    nothing to record, and a record of 0 edits would read as a check that passed."""
    assert TRIED["edits"] >= 100, f"the property test ran {TRIED['edits']} edits; run the whole file"
    # the edits reach both outcomes: refused (one-line errors) and still-valid experiments
    assert 0 < TRIED["refused"] < TRIED["edits"], TRIED
    reliability.record("bad input: experiment file", "mutated experiment YAML (unknown keys, wrong types, missing "
                       "sections, extreme numbers, wrong nesting, YAML tags)", "refused", tried=TRIED["edits"],
                       refused=TRIED["refused"])
