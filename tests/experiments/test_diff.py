"""Deep merge of overrides, dotted keys and differences between arms (pure dict functions)."""

from __future__ import annotations

from mlgrpo.experiments.diff import ABSENT, deep_merge, differences, flatten, get_path, leaf_paths, show


def test_deep_merge_merges_mappings_and_replaces_the_rest():
    shared = {"algorithm": {"name": "grpo", "advantage": {"std_scope": None, "eps": 1e-4}},
              "rewards": {"rewards": [{"name": "exact_match"}, {"name": "chrf"}]}, "sampler": {"name": "uniform"}}
    arm = {"algorithm": {"advantage": {"std_scope": "language"}}, "rewards": {"rewards": [{"name": "chrf"}]},
           "sampler": None}
    merged = deep_merge(shared, arm)
    assert merged == {"algorithm": {"name": "grpo", "advantage": {"std_scope": "language", "eps": 1e-4}},
                      "rewards": {"rewards": [{"name": "chrf"}]}, "sampler": None}
    assert shared["algorithm"]["advantage"]["std_scope"] is None  # inputs untouched
    merged["rewards"]["rewards"][0]["name"] = "changed"
    assert arm["rewards"]["rewards"][0]["name"] == "chrf"  # no shared lists with the inputs


def test_flatten_and_leaves():
    tree = {"model": {"lora": None}, "data": {"languages": ["en", "sw"]},
            "rewards": {"rewards": [{"name": "chrf", "per_language": {"sw": {"scale": 0.2}}}]}, "sampler": {}}
    assert flatten(tree) == {"model.lora": None, "data.languages": ["en", "sw"], "rewards.rewards.0.name": "chrf",
                             "rewards.rewards.0.per_language.sw.scale": 0.2, "sampler": {}}
    assert leaf_paths({"a": {"b": 1, "c": {}}, "d": [1]}) == [("a", "b"), ("a", "c"), ("d",)]
    assert get_path(tree, ("rewards", "rewards", 0, "name")) == "chrf"
    assert get_path(tree, ("model", "lora", "r")) is ABSENT


def test_differences_are_exactly_the_keys_that_differ():
    resolved = {
        "ppo": {"algorithm": {"name": "ppo", "eps": 1e-4}, "sampler": None, "training": {"lr": 2e-4}},
        "grpo": {"algorithm": {"name": "grpo", "eps": 1e-4}, "sampler": None, "training": {"lr": 2e-4}},
        "bal": {"algorithm": {"name": "grpo", "eps": 1e-4}, "sampler": {"name": "balanced"}, "training": {"lr": 1e-4}},
    }
    assert differences(resolved) == [
        ("algorithm.name", {"ppo": "ppo", "grpo": "grpo", "bal": "grpo"}),
        ("sampler", {"ppo": None, "grpo": None, "bal": {"name": "balanced"}}),
        ("training.lr", {"ppo": 2e-4, "grpo": 2e-4, "bal": 1e-4}),
    ]
    assert differences({"a": resolved["grpo"], "b": resolved["grpo"]}) == []


def test_a_key_one_arm_lacks_is_absent_not_null():
    rows = differences({"a": {"r": [{"n": 1}]}, "b": {"r": [{"n": 1}, {"n": 2}]}})
    assert rows == [("r.1.n", {"a": ABSENT, "b": 2})]
    assert differences({"a": {"x": None}, "b": {}}) == [("x", {"a": None, "b": ABSENT})]


def test_show_writes_values_as_yaml_would():
    assert [show(v) for v in (None, False, 0.0002, "dapo", ["en", "sw"], {"sw": 4.0}, ABSENT)] == [
        "null", "false", "0.0002", "dapo", "[en, sw]", "{sw: 4.0}", "-"]
