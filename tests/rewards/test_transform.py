"""The per-language reward transform: hand-worked values, wiring through the builder, and why it exists."""

from __future__ import annotations

import statistics

import pytest

from mlgrpo.rewards import LanguageAffine, RewardConfig, RewardGuard, build_reward_functions
from mlgrpo.rewards.transform import transform_by_language


def test_hand_worked():
    table = {"sw": LanguageAffine(scale=0.2, offset=-0.5), "zh": LanguageAffine(offset=1.0)}
    # sw: 0.2 * 1 - 0.5 = -0.3, 0.2 * 0.5 - 0.5 = -0.4; zh: 0 + 1 = 1; de untouched; None untouched.
    got = transform_by_language([1.0, 0.5, 0.0, 0.7, None], ["sw", "sw", "zh", "de", "sw"], table)
    assert got[:4] == pytest.approx([-0.3, -0.4, 1.0, 0.7]) and got[4] is None


def test_applied_through_the_builder_to_the_raw_reward():
    config = RewardConfig.from_dict({"rewards": [
        {"name": "exact_match", "per_language": {"sw": {"scale": 0.2, "offset": -0.5}}}]})
    funcs, _ = build_reward_functions(config)
    got = funcs[0](prompts=[""] * 4, completions=["moja", "mbili", "eins", "zwei"],
                   answers=[["moja"], ["moja"], ["eins"], ["eins"]], language=["sw", "sw", "de", "de"])
    # sw: 1 -> -0.3, 0 -> -0.5; de: 1, 0 as they are.
    assert got == pytest.approx([-0.3, -0.5, 1.0, 0.0])
    assert funcs[0].__name__ == "exact_match"


def test_missing_language_column_is_reported_by_the_guard():
    config = RewardConfig.from_dict({"rewards": [{"name": "chrf", "per_language": {"sw": {"scale": 2}}}]})
    guard = RewardGuard("zero")
    funcs, _ = build_reward_functions(config, guard)
    assert funcs[0](prompts=[""], completions=["a"], reference=["a"]) == [0.0]
    assert guard.counts()["chrf"]["error"] == 1


def test_group_normalised_advantages_survive_the_transform():
    # One prompt's group is in one language, so (r - mean) / (std + eps) (TRL: ddof=1, eps=1e-4)
    # is unchanged by r -> 0.2 r - 0.5, up to eps; the batch mean over two languages is not.
    sw = [1.0, 0.0, 0.5, 0.25]
    shifted = transform_by_language(sw, ["sw"] * 4, {"sw": LanguageAffine(scale=0.2, offset=-0.5)})

    def advantages(group):
        mean, std = statistics.mean(group), statistics.stdev(group)
        return [(r - mean) / (std + 1e-4) for r in group]

    # The eps moves them by about eps / std = 1e-4 / 0.085 = 1.2e-3 relative (std of the scaled group).
    assert advantages(shifted) == pytest.approx(advantages(sw), rel=2e-3)
    de = [1.0, 0.0, 0.5, 0.25]
    assert statistics.mean(shifted + de) != pytest.approx(statistics.mean(sw + de))
