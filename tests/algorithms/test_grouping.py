"""Group keys: ids from prompts, languages, stable hashes and lengths."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from mlgrpo.algorithms.grouping import GROUP_KEYS, GroupingParams, GroupKeys, stable_hash
from mlgrpo.errors import UserError

PROMPTS = ["二加三？", "2+3?", "二加三？", "Wie viel ist 2+3?", "2+3?", "二加三？"]
LANGS = ["zh", "en", "zh", "de", "en", "ja"]


def ids(name: str, keys: GroupKeys, **params) -> list[int]:
    return GROUP_KEYS.get(name)(keys, GroupingParams(**params)).tolist()


def same_partition(a: list[int], b: list[int]) -> bool:
    """True when two id lists group the rows the same way (the id values themselves are arbitrary)."""
    return all((a[i] == a[j]) == (b[i] == b[j]) for i in range(len(a)) for j in range(len(a)))


def test_prompt_and_language_ids():
    keys = GroupKeys.from_rows(PROMPTS, LANGS)
    assert keys.languages == ("de", "en", "ja", "zh")  # sorted codes: lang id i names languages[i]
    assert keys.lang_ids.tolist() == [3, 1, 3, 0, 1, 2]
    assert ids("prompt", keys) == [0, 1, 0, 2, 1, 0]  # by first appearance of the text
    assert ids("language", keys) == [3, 1, 3, 0, 1, 2]


def test_prompt_in_language_splits_a_prompt_used_in_two_languages():
    keys = GroupKeys.from_rows(PROMPTS, LANGS)
    # "二加三？" appears as zh (rows 0, 2) and as ja (row 5): two groups
    assert same_partition(ids("prompt_in_language", keys), [0, 1, 0, 2, 1, 3])


def test_trl_block_layout():
    keys = GroupKeys.from_rows(["a", "a", "b", "b", "a", "a"], ["en"] * 6, group_size=2)
    assert keys.prompt_ids.tolist() == [0, 0, 1, 1, 2, 2]  # prompt "a" drawn twice: two groups, as in TRL
    with pytest.raises(UserError, match="rows 2..3"):
        GroupKeys.from_rows(["a", "a", "b", "c"], ["en"] * 4, group_size=2)
    with pytest.raises(UserError, match="groups of 4"):
        GroupKeys.from_rows(["a"] * 6, ["en"] * 6, group_size=4)


def test_hash_buckets_pool_prompts_and_are_stable_across_processes():
    keys = GroupKeys.from_rows(PROMPTS, LANGS)
    buckets = ids("prompt_hash_bucket", keys, hash_buckets=3)
    assert all(0 <= b < 3 for b in buckets)
    assert buckets[0] == buckets[2] == buckets[5] and buckets[1] == buckets[4]  # same text, same bucket
    # Python's hash() is salted per process; ours must not be (ranks and reruns must agree).
    text = "二加三？"
    code = f"from mlgrpo.algorithms.grouping import stable_hash; print(hash({text!r}), stable_hash({text!r}))"
    seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True,
        check=True,
    ).stdout.split()
    assert out[0] != str(hash(text)), "the other process should salt hash() differently"
    assert out[1] == str(stable_hash(text))
    assert 0 <= stable_hash("x") < 2**63


def test_length_buckets():
    keys = GroupKeys.from_rows(["a"] * 5, ["en"] * 5, lengths=[3, 10, 11, 25, 400])
    # edges (10, 20): [0, 10) -> 0, [10, 20) -> 1, [20, inf) -> 2
    assert ids("length_bucket", keys, length_edges=(10, 20)) == [0, 1, 1, 2, 2]


def test_missing_inputs_and_unknown_names_are_user_errors():
    zeros = lambda n: torch.zeros(n, dtype=torch.long)  # noqa: E731
    keys = GroupKeys(prompt_ids=zeros(2), lang_ids=zeros(2), languages=("en",))
    with pytest.raises(UserError, match="lengths="):
        ids("length_bucket", keys)
    with pytest.raises(UserError, match="prompt hashes"):
        ids("prompt_hash_bucket", keys)
    with pytest.raises(UserError, match="did you mean 'prompt_in_language'"):
        GROUP_KEYS.get("prompt_in_lang")
    with pytest.raises(UserError, match="language codes"):
        GroupKeys.from_rows(["a", "b"], ["en"])
    with pytest.raises(ValueError, match="lang_ids"):
        GroupKeys(prompt_ids=zeros(2), lang_ids=zeros(3), languages=("en",))
