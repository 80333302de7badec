"""Shaping options: temperature schedule, relative/absolute mix, objectives, inter-group regulariser."""

from __future__ import annotations

import math

import pytest
import torch

from mlgrpo.algorithms.shaping import (
    InterGroupRows,
    inter_group_change,
    inter_group_rows,
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


def rows_of(rows: InterGroupRows, index) -> InterGroupRows:
    return InterGroupRows(rows.group_ids[index], rows.centred_mean[index], rows.group_size[index], rows.groups[index])


def test_inter_group_change_over_a_whole_rollout_is_the_change_of_the_variance():
    gen = torch.Generator().manual_seed(0)
    adv = torch.randn(48, generator=gen, dtype=torch.float64)
    groups = torch.randint(0, 7, (48,), generator=gen)
    ratio = 0.5 + torch.rand(48, generator=gen, dtype=torch.float64)
    rows = inter_group_rows(adv, groups)
    change = inter_group_change(adv, ratio, rows)
    expected = inter_group_variance(adv * ratio, groups) - inter_group_variance(adv, groups)
    assert change.item() == pytest.approx(expected.item(), rel=1e-12, abs=1e-12)


def test_inter_group_change_of_fragments_sums_to_the_whole_group_gradient():
    # A rollout split into 3 shuffled micro-batches (fragments of groups): the gradients of the three
    # shares at ratio 1 add up to the gradient of var_g(mean(ratio * A)) over whole groups.
    gen = torch.Generator().manual_seed(1)
    adv = torch.randn(30, generator=gen, dtype=torch.float64) + torch.arange(30, dtype=torch.float64) % 3
    groups = torch.arange(30) // 5  # 6 groups of 5
    log_ratio = torch.zeros(30, dtype=torch.float64, requires_grad=True)
    inter_group_variance(adv * torch.exp(log_ratio), groups).backward()
    whole = log_ratio.grad.clone()
    log_ratio.grad = None
    rows = inter_group_rows(adv, groups)
    for part in torch.randperm(30, generator=gen).chunk(3):
        inter_group_change(adv[part], torch.exp(log_ratio[part]), rows_of(rows, part)).backward()
    torch.testing.assert_close(log_ratio.grad, whole, rtol=1e-12, atol=1e-12)
    assert whole.abs().max() > 0.01


def test_inter_group_change_by_hand():
    # A = [1, 3, -2] in groups [a, a, b]: m0 = (2, -2), c0 = 0, G = 2. Rows 0 and 2 at ratio 2 and 0.5:
    # d_a = 1 * 1 / 2 = 0.5, d_b = -2 * -0.5 / 1 = 1; (2/2)(2 * 0.5 + -2 * 1) + (0.25 + 1) / 2 - (1.5 / 2)^2
    # = -1 + 0.625 - 0.5625 = -0.9375; directly: m = (2.5, -1), var = 1.75^2 = 3.0625 against 4.
    rows = inter_group_rows(torch.tensor([1.0, 3.0, -2.0]), torch.tensor([0, 0, 1]))
    pick = torch.tensor([0, 2])
    assert rows.centred_mean.tolist() == [2.0, 2.0, -2.0] and rows.groups.tolist() == [2.0, 2.0, 2.0]
    change = inter_group_change(torch.tensor([1.0, -2.0]), torch.tensor([2.0, 0.5]), rows_of(rows, pick))
    assert change.item() == pytest.approx(-0.9375)
    assert inter_group_change(torch.tensor([]), torch.tensor([]), rows_of(rows, pick[:0])).item() == 0.0
