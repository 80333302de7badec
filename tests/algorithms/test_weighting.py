"""Reward columns -> one reward per completion: the two missing-value rules, against TRL's own lines."""

from __future__ import annotations

import pytest
import torch

from mlgrpo.algorithms import WEIGHTINGS, all_scored, any_scored

NAN = float("nan")
COLUMNS = torch.tensor([[1.0, -2.0], [0.0, 4.0], [NAN, 1.0], [NAN, NAN]])  # columns: safety, helpfulness


def test_any_scored_is_trls_nansum_with_nan_for_unscorable_rows():
    # 0.7 * 1 + 0.3 * -2 = 0.1; 0.3 * 4 = 1.2; only helpfulness: 0.3; nothing: NaN
    out = any_scored(COLUMNS, torch.tensor([0.7, 0.3]))
    assert out[:3].tolist() == pytest.approx([0.1, 1.2, 0.3]) and torch.isnan(out[3])
    # TRL 1.16, GRPOTrainer._generate_and_score_completions (sum_then_normalize):
    trl = (COLUMNS * torch.tensor([0.7, 0.3]).unsqueeze(0)).nansum(dim=1)
    trl[torch.isnan(COLUMNS).all(dim=1)] = NAN
    torch.testing.assert_close(out, trl, equal_nan=True)


def test_all_scored_needs_every_objective():
    out = all_scored(COLUMNS, (0.7, 0.3))
    assert out[:2].tolist() == pytest.approx([0.1, 1.2]) and torch.isnan(out[2:]).all()


def test_registered_and_shapes_checked():
    assert WEIGHTINGS.names() == ("all_scored", "any_scored")
    with pytest.raises(ValueError, match="3 weights|F weights"):
        all_scored(COLUMNS, (1.0, 1.0, 1.0))
