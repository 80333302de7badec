"""Shaping options: temperature schedule, relative/absolute mix, objectives, inter-group regulariser."""

from __future__ import annotations

import math

import pytest
import torch

from mlgrpo.algorithms.shaping import (
    combine_objectives,
    inter_group_variance,
    mix_relative_absolute,
    scheduled_temperature,
    temperature_advantages,
)

NAN = float("nan")


def test_temperature_schedule_follows_the_notes():
    # T = 1 - 0.5 * step / total
    assert [scheduled_temperature(s, 100, 1.0, 0.5) for s in (0, 50, 100, 150)] == [1.0, 0.75, 0.5, 0.5]
    with pytest.raises(ValueError):
        scheduled_temperature(1, 0, 1.0, 0.5)


def test_temperature_advantages_by_hand():
    # Two rows with A = -1, +1 at T = 1: weights e^-1, e^1 (shifted by the max: e^-2, 1); their mean is
    # (e^-2 + 1) / 2 = 0.567668; A' = e^-2 / 0.567668 - 1 = -0.761594 and 1 / 0.567668 - 1 = 0.761594,
    # which is -+tanh(1). A singleton and a zero-std group stay 0; the NaN row is left out and gets 0.
    a = torch.tensor([-1.0, 1.0, 0.0, 0.0, 0.0, NAN], dtype=torch.float64)
    g = torch.tensor([0, 0, 1, 1, 2, 1])
    out = temperature_advantages(a, g, 1.0)
    assert out.tolist() == pytest.approx([-math.tanh(1), math.tanh(1), 0.0, 0.0, 0.0, 0.0])
    # T = 0.5 sharpens: -+tanh(2)
    assert temperature_advantages(a, g, 0.5)[:2].tolist() == pytest.approx([-math.tanh(2), math.tanh(2)])


def test_temperature_keeps_order_sums_to_zero_and_never_overflows():
    a = torch.tensor([1000.0, -1000.0, 3.0, 1.0, 2.0])  # exp(2000) overflows unless shifted
    g = torch.tensor([0, 0, 1, 1, 1])
    out = temperature_advantages(a, g, 0.5)
    assert torch.isfinite(out).all()
    assert out[2] > out[4] > out[3]
    assert out[:2].sum().item() == pytest.approx(0.0, abs=1e-5) and out[2:].sum().item() == pytest.approx(0.0, abs=1e-5)


def test_mix_relative_absolute_by_hand():
    rel, absolute = torch.tensor([1.0, -1.0, 0.5]), torch.tensor([0.8, 0.2, NAN])
    # 0.25 * rel + 0.75 * abs: 0.25 + 0.6 = 0.85; -0.25 + 0.15 = -0.1; 0.125 + 0 (no reward) = 0.125
    assert mix_relative_absolute(rel, absolute, 0.25).tolist() == pytest.approx([0.85, -0.1, 0.125])
    assert mix_relative_absolute(rel, absolute, 1.0) is rel


def test_combine_objectives_by_hand():
    per_objective = torch.tensor([[1.0, -2.0], [0.0, 4.0]])  # columns: safety, helpfulness
    # alpha = 0.7: 0.7 * 1 + 0.3 * -2 = 0.1; 0.7 * 0 + 0.3 * 4 = 1.2
    assert combine_objectives(per_objective, (0.7, 0.3)).tolist() == pytest.approx([0.1, 1.2])
    with pytest.raises(ValueError, match="3 weights"):
        combine_objectives(per_objective, (1.0, 1.0, 1.0))


def test_inter_group_variance_by_hand_and_gradient():
    # group means: [1, 3] -> 2 and [5] -> 5 and [NaN, 2] -> 2; mean of means 3; variance ((1 + 4 + 1) / 3) = 2
    adv = torch.tensor([1.0, 3.0, 5.0, NAN, 2.0], dtype=torch.float64, requires_grad=True)
    g = torch.tensor([0, 0, 1, 2, 2])
    var = inter_group_variance(adv, g)
    assert var.item() == pytest.approx(2.0)
    var.backward()
    # d var / d mean_k = 2 (mean_k - 3) / 3 -> [-2/3, 4/3, -2/3]; each row gets its group's share / size
    assert adv.grad.tolist() == pytest.approx([-1 / 3, -1 / 3, 4 / 3, 0.0, -2 / 3])
    assert inter_group_variance(torch.tensor([1.0, -1.0]), torch.tensor([0, 0])).item() == 0.0  # one group
