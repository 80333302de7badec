"""Macro, worst-language and gap rows with confidence intervals: a stratified two-stage bootstrap.

Each replicate draws the seeds once (the same seeds for every language: a seed is one training run,
which produced every language's outputs) and the items of each language within that language, then
reduces the per-language statistics (mean over seeds of the per-seed item mean, as stats.bootstrap_ci)
to one number:

    macro  mean over languages              worst  the worst language (min; max where lower is better)
    gap    best minus worst language (max - min, always >= 0)

Differences a - b of those rows draw the same indices for both arms. Their p-value is the bootstrap's
two-sided one, 2 * min(P*(d <= 0), P*(d >= 0)) capped at 1: a sign flip per item (stats.paired_difference)
has no meaning for a statistic over several languages' items.

Per-language arrays are (S, n_l): the same S seeds (rows in the same order) for every language.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mlgrpo.reports.stats import Difference, Interval, _percentiles, _seed_mean, resampled_means

ROWS = ("macro", "worst", "gap")


def reduce(values: np.ndarray, row: str, lower_is_better: bool) -> np.ndarray:
    """values (..., L) per-language statistics -> (...) the `row` aggregate, NaN languages skipped.

    Hand-worked: [0.2, 0.6, 0.4] -> macro 0.4, worst 0.2 (0.6 when lower is better), gap 0.4.
    """
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices are NaN, as documented
            if row == "macro":
                return np.nanmean(values, axis=-1)
            if row == "worst":
                return np.nanmax(values, axis=-1) if lower_is_better else np.nanmin(values, axis=-1)
            if row == "gap":
                return np.nanmax(values, axis=-1) - np.nanmin(values, axis=-1)
    raise ValueError(f"unknown aggregate row {row!r}; use one of {', '.join(ROWS)}")


def _replicates(arrays: Sequence[np.ndarray], n_boot: int, rng: np.random.Generator,
                seed_idx: np.ndarray | None = None, item_idx: list[np.ndarray] | None = None):
    """(point (L,), replicates (n_boot, L), seed_idx, item_idx): each language's statistic."""
    n_seeds = arrays[0].shape[0]
    if any(a.ndim != 2 or a.shape[0] != n_seeds for a in arrays):
        raise ValueError("per-language arrays must all be (S, n_l) with the same S (seeds in the same order)")
    if seed_idx is None:
        seed_idx = rng.integers(0, n_seeds, size=(n_boot, n_seeds))
        item_idx = [rng.integers(0, max(1, a.shape[1]), size=(n_boot, max(1, a.shape[1]))) for a in arrays]
    point = np.array([_seed_mean(a) if a.size else math.nan for a in arrays])
    boot = np.stack([resampled_means(a, seed_idx, idx) if a.size else np.full(n_boot, math.nan)
                     for a, idx in zip(arrays, item_idx)], axis=1)
    return point, boot, seed_idx, item_idx


def aggregate_intervals(arrays: Sequence[np.ndarray], lower_is_better: bool = False, level: float = 0.95,
                        n_boot: int = 2000, seed: int = 0) -> dict[str, Interval]:
    """{"macro" | "worst" | "gap": Interval} over the languages' (S, n_l) arrays."""
    if not arrays:
        return {}
    point, boot, _, _ = _replicates(arrays, n_boot, np.random.default_rng(seed))
    n_seeds = int(max((~np.isnan(a)).any(axis=1).sum() for a in arrays))
    n_items = int(sum((~np.isnan(a)).any(axis=0).sum() for a in arrays))
    out = {}
    for row in ROWS:
        low, high = _percentiles(reduce(boot, row, lower_is_better), level)
        out[row] = Interval(float(reduce(point, row, lower_is_better)), low, high, n_seeds, n_items, n_seeds > 1, level)
    return out


def aggregate_differences(a: Sequence[np.ndarray], b: Sequence[np.ndarray], lower_is_better: bool = False,
                          level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> dict[str, Difference]:
    """{"macro" | "worst" | "gap": Difference} of arm a minus arm b, both resampled with the same indices.
    Only (seed, item) pairs where both arms have a value take part, as in stats.paired_difference, and
    only languages with such pairs; `n_pairs` is the fewest pairs of any of them (evidence.judge needs 2)."""
    if [x.shape for x in a] != [y.shape for y in b]:
        raise ValueError(f"arms must have the same shapes per language, got {[x.shape for x in a]} and "
                         f"{[y.shape for y in b]}")
    # A language where no (seed, item) has both arms' values takes no part (as `reduce` skips NaN languages).
    kept = [(x, y) for x, y in zip(a, b) if (~(np.isnan(x) | np.isnan(y))).any()]
    if not kept:
        nan = Difference(math.nan, math.nan, math.nan, math.nan, 0, 0, 0, False, level)
        return {row: nan for row in ROWS}
    a, b = [x for x, _ in kept], [y for _, y in kept]
    if all(x.shape[1] == 1 for x in a):
        return _per_seed_differences(a, b, lower_is_better, level, n_boot, seed)
    both = [np.where(np.isnan(x) | np.isnan(y), np.nan, 1.0) for x, y in zip(a, b)]
    a = [x * m for x, m in zip(a, both)]
    b = [y * m for y, m in zip(b, both)]
    rng = np.random.default_rng(seed)
    point_a, boot_a, seed_idx, item_idx = _replicates(a, n_boot, rng)
    point_b, boot_b, _, _ = _replicates(b, n_boot, rng, seed_idx, item_idx)
    # The fewest pairs any language has: with one pair in a language (one seed, no per-prompt scores)
    # every replicate is the same number, a zero-width interval that must not be read as certainty.
    n_pairs = int(min((~np.isnan(m)).sum() for m in both))
    n_seeds = int(max((~np.isnan(m)).any(axis=1).sum() for m in both))
    out = {}
    for row in ROWS:
        d = reduce(boot_a, row, lower_is_better) - reduce(boot_b, row, lower_is_better)
        low, high = _percentiles(d, level)
        valid = d[~np.isnan(d)]
        p = min(1.0, 2.0 * min((valid <= 0).mean(), (valid >= 0).mean())) if valid.size else math.nan
        mean = float(reduce(point_a, row, lower_is_better) - reduce(point_b, row, lower_is_better))
        out[row] = Difference(mean, low, high, p, n_pairs, 0, n_seeds, n_seeds > 1, level)
    return out


def _per_seed_differences(a, b, lower_is_better: bool, level: float, n_boot: int, seed: int) -> dict[str, Difference]:
    """Seed-level values only (no per-prompt scores): each seed's aggregate is one paired observation, tested
    like a language (stats.paired_difference: sign flips over seeds). A bootstrap over two or three seeds
    has a handful of distinct replicates and would give a tight interval and a tiny p that mean nothing."""
    from mlgrpo.reports.stats import paired_difference

    values_a = np.concatenate(a, axis=1)  # (S, L): each seed's value per language
    values_b = np.concatenate(b, axis=1)
    both = ~(np.isnan(values_a) | np.isnan(values_b))
    values_a, values_b = np.where(both, values_a, np.nan), np.where(both, values_b, np.nan)
    return {row: paired_difference(reduce(values_a, row, lower_is_better)[:, None],
                                   reduce(values_b, row, lower_is_better)[:, None], level=level, n_boot=n_boot,
                                   seed=seed) for row in ROWS}
