"""Reward clipping and winsorising (algorithms.reward_clip): hand-worked, against numpy, and what it fixes."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import torch

from mlgrpo.algorithms import AdvantageConfig, GroupKeys, compute_advantages
from mlgrpo.algorithms import reward_clip
from mlgrpo.algorithms.reward_clip import ColumnBounds, clip_rewards, column_bounds

NAN = float("nan")


def test_docstring_examples_hold():
    result = doctest.testmod(reward_clip)
    assert result.attempted >= 2 and result.failed == 0


def test_quantile_bounds_equal_numpy_percentiles_and_ignore_unscored_rows():
    generator = torch.Generator().manual_seed(0)
    values = torch.randn(200, generator=generator) ** 3  # long tails both ways
    values[::7] = NAN
    low, high = column_bounds(values, ColumnBounds(lower_quantile=0.05, upper_quantile=0.95))
    scored = values[~values.isnan()].double().numpy()
    assert np.isclose(low, np.percentile(scored, 5)) and np.isclose(high, np.percentile(scored, 95))
    out = clip_rewards(values[:, None], [ColumnBounds(lower_quantile=0.05, upper_quantile=0.95)])
    kept = out.rewards[:, 0]
    assert torch.equal(kept.isnan(), values.isnan())  # unscored rows stay unscored
    # A plain loop over the rows gives the same clipped values and shares.
    expected = [v if v != v else min(max(v, low), high) for v in values.tolist()]
    torch.testing.assert_close(kept, torch.tensor(expected), equal_nan=True)
    n = len(scored)
    assert out.clipped_low.item() == pytest.approx(sum(v < low for v in scored) / n) == pytest.approx(9 / 171)
    assert out.clipped_high.item() == pytest.approx(sum(v > high for v in scored) / n)


def test_fixed_and_quantile_bounds_combine_to_the_tighter():
    values = torch.arange(11.0)[:, None]  # quantiles 0.1 / 0.9 of 0..10: 1.0 and 9.0
    out = clip_rewards(values, [ColumnBounds(min=2.0, max=20.0, lower_quantile=0.1, upper_quantile=0.9)])
    assert (out.low.item(), out.high.item()) == (2.0, 9.0)
    assert out.rewards[:, 0].tolist() == [2, 2, 2, 3, 4, 5, 6, 7, 8, 9, 9]
    assert round(out.clipped_low.item(), 4) == round(2 / 11, 4) and round(out.clipped_high.item(), 4) == round(1 / 11, 4)


def test_clipping_gives_an_outlier_group_back_its_signal():
    # One group of four: rewards 0, 1, 0 and a reward model's outlier 40. Unclipped, the group's mean is
    # 10.25 and its std (ddof 1) sqrt((3 x 10.25^2 - ... ) / 3) = sqrt(1180.75 / 3) = 19.839, so the correct
    # answer (1) is pushed below zero: (1 - 10.25) / 19.839 = -0.466. Clipped to [0, 1] the rewards are
    # 0, 1, 0, 1: mean 0.5, std sqrt(4 x 0.25 / 3) = 0.57735, and the correct answer gets +0.866.
    rewards = torch.tensor([[0.0], [1.0], [0.0], [40.0]])
    keys = GroupKeys.from_rows(["p"] * 4, ["en"] * 4, group_size=4)
    raw = compute_advantages(rewards[:, 0], keys, AdvantageConfig()).advantages
    clipped = clip_rewards(rewards, [ColumnBounds(min=0.0, max=1.0)])
    bounded = compute_advantages(clipped.rewards[:, 0], keys, AdvantageConfig()).advantages
    assert round(raw[1].item(), 3) == round((1 - 10.25) / (19.839 + 1e-4), 3) == -0.466
    assert round(bounded[1].item(), 3) == round(0.5 / (0.57735 + 1e-4), 3) == 0.866
    assert clipped.clipped_high.item() == 0.25 and clipped.clipped_low.item() == 0.0
