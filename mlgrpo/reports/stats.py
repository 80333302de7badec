"""Statistics for comparing training arms (PPO vs GRPO, ...) over seeds and held-out prompts.

Pure numpy functions: no torch, no MLflow, no I/O. Each one is deterministic given its `seed`.

Data shape everywhere: the per-item scores of one arm, for one language and one metric, as a
2-D float array `scores[seed_index, item_index]`. Items are the same held-out prompts in every
seed and every arm, so two arms are paired by (seed, item). NaN means "not applicable" and is
skipped; +-inf is a bug upstream and raises. A single seed is shape (1, n); a 1-D array is read
as one seed.

    bootstrap_ci(scores)          -> Interval    mean and two-stage bootstrap CI of one arm
    paired_difference(a, b)       -> Difference  a - b with bootstrap CI and sign-flip p-value
    holm(p_values)                -> adjusted p-values (Holm-Bonferroni)
    curve_band(values)            -> CurveBand   per-step mean and t-interval over seeds
    volatility, steps_to_fraction, count_nonfinite: summaries of one training curve

The statistic of an arm is the mean over seeds of the per-seed mean over items: every seed
weighs the same, whatever its number of applicable items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np

_PERM_BLOCK = 1 << 22  # sign-flip entries drawn per block: bounds memory at ~32 MB


@dataclass(frozen=True)
class Interval:
    """Mean of one arm and its percentile bootstrap interval at `level`.

    `seeds_resampled` is False when fewer than two seeds have values: the interval then covers
    prompt variance only, not seed variance, and a report must say so.
    """

    mean: float
    low: float
    high: float
    n_seeds: int  # seeds with at least one applicable value
    n_items: int  # items applicable in at least one seed
    seeds_resampled: bool
    level: float


@dataclass(frozen=True)
class Difference:
    """Paired difference a - b: mean, bootstrap interval, two-sided sign-flip p-value."""

    mean: float
    low: float
    high: float
    p_value: float
    n_pairs: int  # (seed, item) pairs where both arms have a value
    n_dropped: int  # pairs dropped because only one of a, b has a value (both NaN: not applicable)
    n_seeds: int
    seeds_resampled: bool
    level: float


class CurveBand(NamedTuple):
    """Per-step mean over seeds and its t-interval; each field has shape (n_steps,)."""

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


# --------------------------------------------------------------------------- bootstrap


def bootstrap_ci(scores, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> Interval:
    """Mean over seeds of the per-seed nanmean, with a two-stage (hierarchical) percentile bootstrap.

    Each replicate draws seeds with replacement, then items with replacement; one item draw is
    shared by all seeds of the replicate, because the prompts are the same in every seed. With a
    single seed only items are resampled (`seeds_resampled=False`). Seeds and items with no
    applicable value are left out first. No applicable value at all gives NaN mean and bounds.
    Memory is O(n_boot * n_items).
    """
    x = _as_scores(scores, "scores")
    _check_level(level, n_boot)
    return _interval(x, level, n_boot, np.random.default_rng(seed))


def _interval(x: np.ndarray, level: float, n_boot: int, rng: np.random.Generator) -> Interval:
    x = _drop_empty(x)
    n_seeds, n_items = x.shape
    if x.size == 0:
        return Interval(math.nan, math.nan, math.nan, 0, 0, False, level)
    seed_idx = rng.integers(0, n_seeds, size=(n_boot, n_seeds))
    item_idx = rng.integers(0, n_items, size=(n_boot, n_items))
    boot = resampled_means(x, seed_idx, item_idx)
    low, high = _percentiles(boot, level)
    return Interval(_seed_mean(x), low, high, n_seeds, n_items, n_seeds > 1, level)


def resampled_means(x: np.ndarray, seed_idx: np.ndarray, item_idx: np.ndarray) -> np.ndarray:
    """Statistic of each bootstrap replicate, shape (n_boot,).

    x: (S, n) scores, NaN = not applicable; seed_idx: (n_boot, S) and item_idx: (n_boot, n) row
    indices drawn with replacement. Replicate b is `_seed_mean(x[seed_idx[b]][:, item_idx[b]])`,
    computed without materialising (n_boot, S, n): resampling is counting, so the per-seed sums
    are (draw counts) @ values. A seed with no applicable drawn item is skipped; a replicate with
    none at all is NaN.
    """
    valid = ~np.isnan(x)
    item_counts = _draw_counts(item_idx, x.shape[1])  # (n_boot, n)
    sums = item_counts @ np.where(valid, x, 0.0).T  # (n_boot, S)
    counts = item_counts @ valid.T.astype(float)  # (n_boot, S)
    has = counts > 0
    per_seed = np.where(has, sums / np.where(has, counts, 1.0), 0.0)
    weights = _draw_counts(seed_idx, x.shape[0]) * has  # (n_boot, S)
    total = weights.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights * per_seed).sum(axis=1) / total


def _draw_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """(n_boot, k) indices in [0, n) -> (n_boot, n) float counts of how often each was drawn."""
    offsets = idx + n * np.arange(idx.shape[0])[:, None]
    return np.bincount(offsets.ravel(), minlength=idx.shape[0] * n).reshape(idx.shape[0], n).astype(float)


def _percentiles(boot: np.ndarray, level: float) -> tuple[float, float]:
    """Percentile interval; replicates that drew no applicable value (NaN) are ignored."""
    if np.isnan(boot).all():
        return math.nan, math.nan
    tail = (1.0 - level) / 2.0
    low, high = np.nanquantile(boot, [tail, 1.0 - tail])
    return float(low), float(high)


def _seed_mean(x: np.ndarray) -> float:
    """Mean over seeds of the per-seed nanmean; seeds with no value are skipped (NaN if none)."""
    valid = ~np.isnan(x)
    counts = valid.sum(axis=1)
    if not counts.any():
        return math.nan
    has = counts > 0
    per_seed = np.where(valid, x, 0.0).sum(axis=1)[has] / counts[has]
    return float(per_seed.mean())


# --------------------------------------------------------------------------- paired comparison


def paired_difference(
    a, b, level: float = 0.95, n_boot: int = 2000, n_perm: int = 10000, seed: int = 0
) -> Difference:
    """Difference a - b of the arm statistics, paired by (seed, item).

    Pairs where either arm is NaN are dropped (those with exactly one NaN counted in `n_dropped`); the mean is then the
    statistic of the per-pair differences d = a - b, which equals mean(a) - mean(b) over the kept
    pairs. The CI is the two-stage bootstrap of d (seeds, then items, drawn jointly for both arms).
    The p-value is a two-sided paired sign-flip permutation test on d with the same weighted-mean
    statistic: exact enumeration when 2**n_pairs <= n_perm, else n_perm random flips with add-one
    smoothing, (count + 1) / (n_perm + 1). All-zero differences give p = 1.
    """
    xa, xb = _as_scores(a, "a"), _as_scores(b, "b")
    if xa.shape != xb.shape:
        raise ValueError(
            f"paired_difference needs a and b of the same shape (seeds, items), got {xa.shape} and {xb.shape}: "
            "both arms must be evaluated on the same seeds and the same held-out prompts, in the same order"
        )
    _check_level(level, n_boot)
    if n_perm < 1:
        raise ValueError(f"n_perm must be >= 1, got {n_perm}")
    d = xa - xb  # NaN wherever either arm is NaN
    n_dropped = int((np.isnan(xa) != np.isnan(xb)).sum())
    rng = np.random.default_rng(seed)
    ci = _interval(d, level, n_boot, rng)
    n_pairs = int((~np.isnan(d)).sum())
    p_value = _sign_flip_p(d, n_perm, rng)
    return Difference(ci.mean, ci.low, ci.high, p_value, n_pairs, n_dropped, ci.n_seeds, ci.seeds_resampled, level)


def _sign_flip_p(d: np.ndarray, n_perm: int, rng: np.random.Generator) -> float:
    """Two-sided p-value of H0 "each paired difference is symmetric about 0".

    The statistic `_seed_mean(d)` is linear in the differences, sum_p w_p d_p with
    w_p = 1 / (seeds with values * values in p's seed), so a flip pattern s scores sum_p s_p w_p d_p.
    Each pair flips independently, so the test ignores seed-level correlation that the
    two-stage bootstrap CI does cover; evidence.judge therefore asks for both.
    """
    valid = ~np.isnan(d)
    if not valid.any():
        return math.nan
    per_seed = valid.sum(axis=1)
    weights = 1.0 / (np.count_nonzero(per_seed) * np.broadcast_to(per_seed[:, None], d.shape)[valid])
    wd = weights * d[valid]  # (P,)
    if not wd.any():
        return 1.0
    observed = abs(wd.sum())
    tol = 1e-9 * np.abs(wd).sum()  # float noise must not turn a tie into a miss
    n_pairs = wd.size
    if 2**n_pairs <= n_perm:
        signs = ((np.arange(2**n_pairs)[:, None] >> np.arange(n_pairs)) & 1) * 2 - 1
        return float(np.count_nonzero(np.abs(signs @ wd) >= observed - tol) / 2**n_pairs)
    count, done, block = 0, 0, max(1, _PERM_BLOCK // n_pairs)
    while done < n_perm:  # blocks of flips, not one flip at a time: bounds memory for many pairs
        rows = min(block, n_perm - done)
        signs = rng.integers(0, 2, size=(rows, n_pairs), dtype=np.int8) * 2 - 1
        count += int(np.count_nonzero(np.abs(signs @ wd) >= observed - tol))
        done += rows
    return (count + 1) / (n_perm + 1)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values, in the input order.

    Sorted ascending, p_(i) becomes max_{j<=i} min(1, (m - j + 1) p_(j)) (1-based i, j), so the
    adjusted values keep the order of the raw ones. NaN passes through and is not counted in m.
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"holm takes a 1-D list of p-values, got shape {p.shape}")
    known = ~np.isnan(p)
    if ((p[known] < 0) | (p[known] > 1)).any():
        raise ValueError(f"p-values must lie in [0, 1], got {p[known][(p[known] < 0) | (p[known] > 1)].tolist()}")
    out = np.full_like(p, np.nan)
    raw = p[known]
    order = np.argsort(raw, kind="stable")
    m = raw.size
    stepped = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * raw[order]))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    out[known] = adjusted
    return out


# --------------------------------------------------------------------------- training curves


def curve_band(values, level: float = 0.95) -> CurveBand:
    """Per-step mean over seeds and Student-t interval mean +- t_{(1+level)/2, n-1} * sd / sqrt(n).

    values: (n_seeds, n_steps), NaN for a step a seed did not log; n counts the seeds with a value
    at that step, sd uses ddof=1. With fewer than 2 values at a step low and high are NaN (no
    spread to estimate, so no band is drawn); with none the mean is NaN too.
    """
    x = _as_scores(values, "values")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    valid = ~np.isnan(x)
    n = valid.sum(axis=0)
    filled = np.where(valid, x, 0.0)
    mean = np.where(n > 0, filled.sum(axis=0) / np.maximum(n, 1), np.nan)
    sq = np.where(valid, (x - mean) ** 2, 0.0).sum(axis=0)  # two-pass variance
    sd = np.sqrt(sq / np.maximum(n - 1, 1))
    half = np.full(x.shape[1], np.nan)
    ok = n >= 2
    half[ok] = _t_quantile((1.0 + level) / 2.0, n[ok] - 1) * sd[ok] / np.sqrt(n[ok])
    return CurveBand(mean, mean - half, mean + half)


def _t_quantile(q: float, df: np.ndarray) -> np.ndarray:
    from scipy.stats import t  # installed with mlflow (not pinned in pyproject); imported lazily

    return t.ppf(q, df)


def volatility(series) -> float:
    """Std (ddof=1) of the step-to-step differences of a 1-D series; NaN if < 3 valid points.

    NaN points are removed first, so a difference spans a gap (consecutive logged values).
    """
    y = np.asarray(series, dtype=float)
    if y.ndim != 1:
        raise ValueError(f"volatility takes a 1-D series, got shape {y.shape}")
    y = y[~np.isnan(y)]
    if y.size < 3:
        return math.nan
    return float(np.std(np.diff(y), ddof=1))


def steps_to_fraction(steps, values, fraction: float = 0.9, tail: int = 3) -> float | int | None:
    """First step at which the series has covered `fraction` of its way from start to final.

    start = first valid value; final = mean of the last `tail` valid values (smooths end noise);
    target = start + fraction * (final - start). Rising series (final > start): first step with
    value >= target; falling (final < start, e.g. a loss): first step with value <= target; flat
    (final == start): the first valid step. Pass cumulative samples as `steps` to get samples
    to reach. A transient spike counts as reaching. None if no valid value. For fraction in
    [0, 1] the target is always reached (some tail value is on the far side of their mean).
    """
    s, y = np.asarray(steps), np.asarray(values, dtype=float)
    if s.ndim != 1 or s.shape != y.shape:
        raise ValueError(f"steps and values must be 1-D of the same length, got {s.shape} and {y.shape}")
    if not 0.0 <= fraction <= 1.0 or tail < 1:
        raise ValueError(f"need 0 <= fraction <= 1 and tail >= 1, got fraction={fraction}, tail={tail}")
    valid = ~np.isnan(y)
    if not valid.any():
        return None
    s, y = s[valid], y[valid]
    start, final = y[0], y[-tail:].mean()
    target = start + fraction * (final - start)
    if final > start:
        hit = y >= target
    elif final < start:
        hit = y <= target
    else:
        return s[0].item()
    return s[np.argmax(hit)].item() if hit.any() else None


def count_nonfinite(values) -> int:
    """Number of NaN or +-inf entries (a diverged run logs them)."""
    return int(np.count_nonzero(~np.isfinite(np.asarray(values, dtype=float))))


# --------------------------------------------------------------------------- input checks


def _as_scores(scores, name: str) -> np.ndarray:
    """(seeds, items) float array; 1-D is one seed. Raises on other ranks and on +-inf."""
    x = np.asarray(scores, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D (seeds, items) or 1-D (one seed), got shape {x.shape}")
    n_inf = int(np.isinf(x).sum())
    if n_inf:
        raise ValueError(f"{name} has {n_inf} infinite value(s); use NaN for 'not applicable' and fix the source")
    return x


def _drop_empty(x: np.ndarray) -> np.ndarray:
    """Drop seeds (rows) and items (columns) with no applicable value."""
    valid = ~np.isnan(x)
    return x[valid.any(axis=1)][:, valid.any(axis=0)]


def _check_level(level: float, n_boot: int) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")


def rolling_mean(values, window: int) -> np.ndarray:
    """(S, T) -> (S, T): each point the mean of the `window` points ending at it (fewer at the start),
    NaN skipped; a point with no value in its window is NaN. For noisy per-step training curves.

    Hand-worked, window 2: [1, 3, NaN, 5] -> [1, 2, 3, 5].
    """
    x = np.atleast_2d(np.asarray(values, dtype=float))
    if window <= 1 or x.shape[1] == 0:
        return x.copy()
    valid = ~np.isnan(x)
    sums = np.cumsum(np.where(valid, x, 0.0), axis=1)
    counts = np.cumsum(valid, axis=1).astype(float)
    sums[:, window:] = sums[:, window:] - sums[:, :-window]
    counts[:, window:] = counts[:, window:] - counts[:, :-window]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.where(counts > 0, counts, 1.0), np.nan)
