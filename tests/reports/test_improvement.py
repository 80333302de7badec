"""mlgrpo.reports.improvement: probability of improvement over seeds, worked by hand, against a plain loop,
and its bootstrap interval (seeds redrawn once for all languages)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mlgrpo.reports.improvement import probability_of_improvement


def loop_reference(x, y) -> float:
    """The definition, one pair of seeds at a time: the mean over languages of P(x > y), ties half."""
    per_language = []
    for lang in range(x.shape[1]):
        pairs = [(a, b) for a, b in itertools.product(x[:, lang], y[:, lang]) if not (math.isnan(a) or math.isnan(b))]
        if pairs:
            per_language.append(sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs) / len(pairs))
    return float(np.mean(per_language))


def test_hand_worked():
    # language 1: x = [1, 2] vs y = [0, 2]: 1 + 0 + 1 + 0.5 = 2.5 of 4 pairs; language 2: x always above: 1.0
    found = probability_of_improvement([[1.0, 5.0], [2.0, 6.0]], [[0.0, 1.0], [2.0, 2.0]])
    assert found.probability == pytest.approx((0.625 + 1.0) / 2)
    assert (found.seeds_x, found.seeds_y, found.languages) == (2, 2, 2)
    # lower is better: the same numbers, the other way round
    assert probability_of_improvement([[1.0]], [[2.0]], higher_is_better=False).probability == 1.0


def test_equals_the_loop_with_missing_values():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(7, 4)).round(1), rng.normal(0.3, size=(5, 4)).round(1)
    x[2, 1] = y[0, 3] = np.nan
    assert probability_of_improvement(x, y).probability == pytest.approx(loop_reference(x, y))


def test_interval_covers_the_point_and_is_degenerate_when_every_seed_wins():
    rng = np.random.default_rng(0)
    x, y = rng.normal(0.5, 1, size=(10, 6)), rng.normal(0.0, 1, size=(10, 6))
    found = probability_of_improvement(x, y, seed=1)
    assert found.low <= found.probability <= found.high and 0.5 < found.probability
    assert found == probability_of_improvement(x, y, seed=1)  # deterministic given its seed
    clear = probability_of_improvement(np.ones((6, 3)), np.zeros((6, 3)))
    assert (clear.probability, clear.low, clear.high) == (1.0, 1.0, 1.0)


def test_no_shared_language_and_bad_shapes():
    found = probability_of_improvement([[1.0, np.nan]], [[np.nan, 2.0]])
    assert math.isnan(found.probability) and found.languages == 0
    with pytest.raises(ValueError, match="same languages"):
        probability_of_improvement(np.zeros((2, 3)), np.zeros((2, 2)))
