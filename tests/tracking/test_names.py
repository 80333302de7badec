"""Metric names group by language in the MLflow UI; aggregates are worked out by hand below."""

from __future__ import annotations

import pytest

from mlgrpo.tracking.names import (
    DESCRIPTIVE,
    HIGHER,
    LOWER,
    aggregates,
    clean_name,
    direction,
    generations_table,
    metric_name,
    register_direction,
    tracked_metrics,
)

LANGS = ("en", "ja", "sw")


@pytest.mark.parametrize("split, raw, name", [
    ("train", "reward/en", "train/reward/en"),
    ("train", "reward_std/en", "train/reward_std/en"),
    ("train", "rewards/exact_match/ja", "train/rewards/exact_match/ja"),
    ("train", "adv/zero_std_groups", "train/adv/zero_std_groups"),
    ("train", "kl", "train/kl"),
    ("train", "clip_ratio/region_mean", "train/clip_ratio/region_mean"),
    ("train", "ppo/value_loss", "train/ppo/value_loss"),
    ("train", "system/samples_per_sec", "system/samples_per_sec"),
    ("train", "train_runtime", "train/summary/runtime"),
    ("train", "train_loss", "train/summary/loss"),  # the run's mean loss, not the last step's
    ("train", "total_flos", "train/summary/total_flos"),
    ("train", "train/reward/en", "train/reward/en"),  # already named: unchanged
    ("eval", "eval_exact_match/sw", "eval/exact_match/sw"),
    ("eval", "eval_loss", "eval/loss"),
    ("eval", "eval_runtime", "eval/summary/runtime"),
    ("eval", "eval_system/peak_memory_mb", "system/eval/peak_memory_mb"),
    ("train", "rewards/my reward!/zh-Hans", "train/rewards/my reward_/zh-Hans"),
])
def test_metric_name(split, raw, name):
    assert metric_name(split, raw) == name


def test_metric_name_rejects_unknown_split():
    with pytest.raises(ValueError, match="split"):
        metric_name("test", "reward/en")


def test_clean_name_drops_path_parts_mlflow_rejects():
    assert clean_name("/a//b/./c/../d/") == "a/b/c/d"
    assert clean_name("ü ß:x") == "ü ß:x"  # \w is Unicode; MLflow accepts it


def test_aggregates_hand_worked():
    named = {
        "train/reward/en": 0.5, "train/reward/ja": 0.25, "train/reward/sw": 1.0,
        "train/kl/en": 0.02, "train/kl/ja": 0.08,
        "train/reward_std/en": 0.1, "train/reward_std/ja": 0.3,
        "eval/exact_match/en": 0.75, "eval/exact_match/ja": float("nan"), "eval/exact_match/sw": 0.25,
        "system/peak_memory_mb": 512.0, "train/loss": 1.5,
    }
    out = aggregates(named, LANGS)
    # reward: (0.5 + 0.25 + 1.0) / 3 = 0.58333; worst is the lowest, ja 0.25
    assert out["train/reward/macro"] == pytest.approx(1.75 / 3)
    assert out["train/reward/worst"] == 0.25
    # kl is lower-is-better: worst is the highest, 0.08; macro (0.02 + 0.08) / 2 = 0.05
    assert out["train/kl/worst"] == 0.08 and out["train/kl/macro"] == pytest.approx(0.05)
    # a spread has a mean but no "worst"
    assert out["train/reward_std/macro"] == pytest.approx(0.2) and "train/reward_std/worst" not in out
    # NaN (a language without samples this step) is left out: (0.75 + 0.25) / 2 = 0.5
    assert out["eval/exact_match/macro"] == 0.5 and out["eval/exact_match/worst"] == 0.25
    assert not any(k.startswith("system/") or k.startswith("train/loss") for k in out)


def test_tracked_metrics_splits_renames_pooled_values_and_aggregates():
    logs = {"reward": 0.6, "reward/en": 0.5, "reward/ja": 0.7, "loss": 2.0, "kl": 0.1,
            "eval_reward/en": 0.4, "grad_norm": None, "note": "text"}
    out = tracked_metrics(logs, LANGS)
    assert out["train/reward/all"] == 0.6 and "train/reward" not in out
    assert out["train/reward/macro"] == pytest.approx(0.6) and out["train/reward/worst"] == 0.5
    assert out["eval/reward/en"] == 0.4 and out["eval/reward/macro"] == 0.4
    assert out["train/loss"] == 2.0 and out["train/kl"] == 0.1
    assert out["train/grad_norm"] is None and out["train/note"] is None  # counted as dropped by the run


def test_tracked_metrics_with_a_fixed_split():
    out = tracked_metrics({"exact_match/en": 1.0, "exact_match/sw": 0.0}, LANGS, split="eval")
    assert out == {"eval/exact_match/en": 1.0, "eval/exact_match/sw": 0.0,
                   "eval/exact_match/macro": 0.5, "eval/exact_match/worst": 0.0}


def test_directions():
    assert direction("reward") == HIGHER and direction("rewards/exact_match") == HIGHER
    assert direction("rewards/exact_match_std") == DESCRIPTIVE
    assert direction("ppo/value_loss") == LOWER and direction("kl") == LOWER
    assert direction("completion_length") == DESCRIPTIVE and direction("samples") == DESCRIPTIVE


def test_direction_registry_rejects_duplicates_and_unknown_directions():
    with pytest.raises(ValueError, match="already registered"):
        register_direction("kl", LOWER)
    with pytest.raises(ValueError, match="direction must be"):
        register_direction("brand_new_metric", "sideways")


def test_generations_table_name():
    assert generations_table("eval", 100) == "eval/generations/step_0000100.json"
    with pytest.raises(ValueError):
        generations_table("test", 0)


def test_metrics_that_are_worse_when_higher_aggregate_their_worst_as_the_maximum():
    from mlgrpo.tracking import direction

    for name in ("code_switch", "kl_ref", "toxicity", "collapse", "ppo/kl_penalty", "ppo/value_loss"):
        assert direction(name) == "lower", name
    assert direction("exact_match") == "higher" and direction("reward_guard/chrf/nan") == "descriptive"
