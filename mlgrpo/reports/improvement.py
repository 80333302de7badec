"""Probability of improvement over seeds, with a bootstrap interval, in the manner of rliable
(Agarwal et al., "Deep RL at the Edge of the Statistical Precipice", NeurIPS 2021).

For one language, P(X > Y) is the chance that a run (seed) of arm X scores above a run of arm Y, ties
counted half: the Mann-Whitney U statistic over all M x N pairs of seeds divided by M N. The overall
probability is its mean over languages (rliable's mean over tasks). Its interval is a percentile
bootstrap that redraws each arm's seeds with replacement; unlike rliable, where each task is trained
separately and runs are redrawn per task, a seed here is one run that produced every language, so one
draw of seeds serves all languages of a replicate (redrawing per language would treat the languages of
one run as independent and narrow the interval).

Scores are (seeds, languages): a run's per-language value (mean over its prompts), NaN where missing.
Pure numpy; deterministic given `seed`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Improvement:
    probability: float  # P(X > Y), mean over languages
    low: float
    high: float
    seeds_x: int
    seeds_y: int
    languages: int  # languages where both arms have a value


def probability_of_improvement(x, y, higher_is_better: bool = True, level: float = 0.95, n_boot: int = 2000,
                               seed: int = 0) -> Improvement:
    """P(a seed of X beats a seed of Y) over languages, with its bootstrap interval.

    Hand-worked, one language, x = [1, 2], y = [0, 2]: 1 > 0 (1), 1 < 2 (0), 2 > 0 (1), 2 = 2 (0.5)
    -> 2.5 / 4 = 0.625.

    >>> round(probability_of_improvement([[1.0], [2.0]], [[0.0], [2.0]]).probability, 3)
    0.625
    """
    x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y need the same languages (columns), got {x.shape} and {y.shape}")
    if not higher_is_better:
        x, y = -x, -y
    x, y = x[~np.isnan(x).all(axis=1)], y[~np.isnan(y).all(axis=1)]  # seeds with no value at all
    both = ~np.isnan(x).all(axis=0) & ~np.isnan(y).all(axis=0) if len(x) and len(y) else np.zeros(x.shape[1], bool)
    if not both.any():
        return Improvement(math.nan, math.nan, math.nan, len(x), len(y), 0)
    x, y = x[:, both], y[:, both]
    point = _probability(x[None], y[None])[0]
    rng = np.random.default_rng(seed)
    draws_x = rng.integers(0, len(x), size=(n_boot, len(x)))
    draws_y = rng.integers(0, len(y), size=(n_boot, len(y)))
    boot = _probability(x[draws_x], y[draws_y])
    tail = (1.0 - level) / 2.0
    low, high = np.nanquantile(boot, [tail, 1.0 - tail])
    return Improvement(float(point), float(low), float(high), len(x), len(y), int(both.sum()))


def _probability(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(B, M, L) and (B, N, L) -> (B,): per replicate, the mean over languages of the share of seed pairs
    where x wins (ties half); pairs with a NaN side are left out of their language."""
    a, b = x[:, :, None, :], y[:, None, :, :]  # (B, M, 1, L) against (B, 1, N, L)
    valid = ~(np.isnan(a) | np.isnan(b))
    wins = np.where(valid, (a > b) + 0.5 * (a == b), 0.0).sum(axis=(1, 2))  # (B, L)
    counts = valid.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_language = np.where(counts > 0, wins / np.maximum(counts, 1), np.nan)
        return np.nanmean(per_language, axis=1) if per_language.shape[1] else np.full(len(x), np.nan)
