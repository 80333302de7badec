"""Random-reward controls (issue 26, "Spurious Rewards" arXiv 2506.10947): the real rewards' values and firing
rate, with the link to the completions broken; seeded; the config key; and a control arm that trains."""

from __future__ import annotations

import pytest

from mlgrpo.errors import UserError
from mlgrpo.rewards import RewardConfig, build_reward_functions
from mlgrpo.rewards.control import RewardControl


def scores(values):
    return lambda prompts=None, completions=None, **columns: list(values)


def test_shuffle_permutes_each_batch_with_one_permutation_for_every_function():
    real = [float(i) for i in range(20)]
    first, second = RewardControl("shuffle", seed=3).wrap([scores(real), scores([10 * v for v in real])])
    a, b = first(completions=["x"] * 20), second(completions=["x"] * 20)
    assert sorted(a) == real and a != real  # the same values, moved
    assert b == [10 * v for v in a]  # a completion keeps one real completion's whole reward vector
    again = RewardControl("shuffle", seed=3).wrap([scores(real)])[0](completions=["x"] * 20)
    assert again == a  # seeded


def test_random_keeps_the_firing_rate_and_the_values_and_leaves_none_in_place():
    real = [1.0 if i % 4 == 0 else 0.0 for i in range(4000)] + [None]
    drawn = RewardControl("random", seed=0).wrap([scores(real)])[0](completions=["x"] * len(real))
    assert drawn[-1] is None and set(drawn[:-1]) == {0.0, 1.0}
    fired = sum(drawn[:-1]) / 4000
    assert abs(fired - 0.25) < 0.03  # binomial sd sqrt(.25 * .75 / 4000) = 0.007
    assert drawn[:-1] != real[:-1]


def test_none_leaves_the_functions_as_they_are():
    funcs, _ = build_reward_functions(RewardConfig.from_dict({"rewards": [{"name": "exact_match"}]}))
    assert RewardControl("none", seed=0).wrap(funcs) == funcs
    wrapped = RewardControl("shuffle", seed=0).wrap(funcs)[0]
    assert wrapped.__name__ == "exact_match" and wrapped.guard is funcs[0].guard  # TRL logs it by name


def test_config_key_with_the_closest_valid_value():
    assert RewardConfig.from_dict({"rewards": [{"name": "chrf"}], "control": "shuffle"}).control == "shuffle"
    with pytest.raises(UserError, match=r"control must be one of none, shuffle, random, got 'shufle' \(did you mean 'shuffle'"):
        RewardConfig.from_dict({"rewards": [{"name": "chrf"}], "control": "shufle"})
