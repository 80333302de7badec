"""DAPO's constant-group test and group selection (algorithms.dynamic_sampling): hand-worked, against a loop."""

from __future__ import annotations

import doctest

import pytest
import torch

from mlgrpo.algorithms import AdvantageConfig, GroupKeys, compute_advantages, dynamic_sampling
from mlgrpo.algorithms.dynamic_sampling import constant_groups, select_groups

NAN = float("nan")


def test_docstring_examples_hold():
    result = doctest.testmod(dynamic_sampling)
    assert result.attempted >= 3 and result.failed == 0


def test_a_constant_group_of_continuous_rewards_is_caught_where_a_mean_filter_lets_it_through():
    # OpenRLHF#1270: keeping groups whose mean is neither 0 nor 1 (binary rewards' "all wrong" / "all right")
    # keeps (0.73, 0.73, 0.73, 0.73), mean 0.73, although all its advantages are 0.
    rewards = torch.tensor([0.73] * 4 + [0.0] * 4 + [1.0] * 4)
    ids = torch.arange(3).repeat_interleave(4)
    assert constant_groups(rewards, ids).tolist() == [True] * 12
    mean = rewards.view(3, 4).mean(1)
    assert ((mean > 0) & (mean < 1)).tolist() == [True, False, False]  # the mean filter's answer: wrong for group 0


def test_float32_noise_on_a_constant_group_is_not_spread():
    # NVIDIA-NeMo/RL#4158. Eight rewards of 0.1 in float32: the std of exactly equal values is not 0
    # (the float32 mean of 0.1 x 8 is 0.10000000894, each deviation -8.9e-9, std 7.97e-9), so `std > 0`
    # keeps the group; its range is exactly 0.
    tenths = torch.full((8,), 0.1, dtype=torch.float32)
    assert tenths.std().item() > 0
    # A reward computed two ways, 0.3 and 0.7 - 0.4 in float32, differs by one ulp: 2.98e-8 <= 1e-6.
    computed = torch.stack([torch.tensor(0.3), torch.tensor(0.7) - torch.tensor(0.4)] * 2)
    assert (computed.max() - computed.min()).item() == pytest.approx(2.98e-8, rel=1e-3)
    rewards = torch.cat([tenths, computed])
    ids = torch.tensor([0] * 8 + [1] * 4)
    assert constant_groups(rewards, ids).tolist() == [True] * 12
    # With no tolerance at all the one-ulp group counts as spread (the range is the decision, not rounding).
    assert constant_groups(rewards, ids, tolerance=0.0).tolist() == [True] * 8 + [False] * 4


def test_one_differing_row_keeps_the_whole_group():
    # (1, 1, 1, 0): range 1; (0.5, 0.5, 0.5, 0.501): range 1e-3 > 1e-6 x max(1, 0.501). Whole groups only:
    # every row of a group gets the group's answer (NVIDIA-NeMo/RL#3469: never drop rows one by one).
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.5, 0.5, 0.5, 0.501, 2.0, 2.0, 2.0, 2.0])
    ids = torch.tensor([5, 5, 5, 5, 9, 9, 9, 9, 1, 1, 1, 1])
    assert constant_groups(rewards, ids).tolist() == [False] * 8 + [True] * 4


def test_the_tolerance_is_relative_above_1_and_absolute_below():
    # 1000 and 1000.0005: range 5e-4 <= 1e-6 x 1000.0005 = 1.0e-3, constant. 0 and 5e-7: range 5e-7 <= 1e-6 x 1.
    # 0 and 2e-6: 2e-6 > 1e-6, spread.
    rewards = torch.tensor([1000.0, 1000.0005, 0.0, 5e-7, 0.0, 2e-6], dtype=torch.float64)
    assert constant_groups(rewards, torch.tensor([0, 0, 1, 1, 2, 2])).tolist() == [True, True, True, True, False, False]


def test_unscored_rows_take_no_part_and_objectives_must_all_be_constant():
    # Group 0: (1, NaN, 1, inf) - its scored rows agree: constant. Group 1: all NaN: no signal, constant.
    rewards = torch.tensor([1.0, NAN, 1.0, float("inf"), NAN, NAN])
    ids = torch.tensor([0, 0, 0, 0, 1, 1])
    assert constant_groups(rewards, ids).tolist() == [True] * 6
    # Two objectives: group 0 is constant in both; group 1 only in the first, so it keeps a signal.
    columns = torch.tensor([[1.0, 0.2], [1.0, 0.2], [0.0, 0.1], [0.0, 0.9]])
    assert constant_groups(columns, torch.tensor([0, 0, 1, 1])).tolist() == [True, True, False, False]


def test_constant_groups_are_exactly_the_groups_whose_advantages_are_all_zero():
    # Against the estimators themselves and a plain loop: a random batch of 0/1 and continuous groups.
    generator = torch.Generator().manual_seed(0)
    binary = torch.randint(0, 2, (40, 4), generator=generator).float()
    continuous = torch.rand(10, 4, generator=generator).round(decimals=1)
    continuous[::3] = continuous[::3, :1]  # every third group constant
    rewards = torch.cat([binary, continuous]).flatten()
    ids = torch.arange(50).repeat_interleave(4)
    found = constant_groups(rewards, ids)
    loop = [len(set(rewards[g * 4 : g * 4 + 4].tolist())) == 1 for g in range(50)]
    assert found.view(50, 4)[:, 0].tolist() == loop and found.view(50, 4).all(1).tolist() == loop
    keys = GroupKeys.from_rows([f"p{g}" for g in range(50) for _ in range(4)], ["en"] * 200, group_size=4)
    for estimator in ("grpo", "dr_grpo", "rloo"):
        advantages = compute_advantages(rewards, keys, AdvantageConfig(estimator=estimator)).advantages
        assert (advantages.view(50, 4) == 0).all(1).tolist() == loop, estimator


def test_select_groups_takes_informative_groups_in_order_then_readmits_the_earliest_constant():
    # Two rounds of three groups: round 0 = (const, inf, const), round 1 = (inf, const, inf).
    flags = torch.tensor([False, True, False, True, False, True])
    assert select_groups(flags, 3).tolist() == [1, 3, 5]  # the refill round supplied two
    assert select_groups(flags, 4).tolist() == [0, 1, 3, 5]  # one short: the earliest constant group, 0
    assert select_groups(flags[:3], 3).tolist() == [0, 1, 2]  # every group: the batch as it was
    assert select_groups(torch.zeros(4, dtype=torch.bool), 2).tolist() == [0, 1]
    with pytest.raises(ValueError, match="5 slots from 3 candidates"):
        select_groups(flags[:3], 5)
