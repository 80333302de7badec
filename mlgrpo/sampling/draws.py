"""Vectorised drawing: how many draws each language gets, in what order, and which rows fill them.

Pure functions of arrays and a numpy Generator; no Python loop runs per draw (a loop over languages
or strata is fine: there are tens of them, and a million draws). Knows nothing about datasets, TRL or MLflow.

Terms: a *stratum* is a set of rows drawn from together (a language; with reward buckets, a language
and bucket). `item_*` arrays have one entry per dataset row, `position_*` arrays one per draw.
"""

from __future__ import annotations

import numpy as np

from mlgrpo.sampling.weights import cap_shares


def systematic_round(shares: np.ndarray, total: int, u: float) -> np.ndarray:
    """Integer counts summing to `total`, each the floor or ceiling of total * share.

    With u uniform on [0, 1) the expected count is exactly total * share (systematic sampling,
    Madow 1949), so rounding does not favour the first language epoch after epoch as largest-remainder
    rounding with fixed tie-breaks would. Example: shares (.5, .3, .2), total 7, u = .5:
    7 * cumsum = 3.5, 5.6, 7.0; + u -> 4.0, 6.1, 7.5; floor -> 4, 6, 7; differences -> 4, 2, 1.
    """
    shares = np.asarray(shares, dtype=np.float64)
    cumulative = np.cumsum(shares / shares.sum())
    cumulative[-1] = 1.0  # the last edge must be exactly `total` whatever the float error
    edges = np.floor(total * cumulative + u).astype(np.int64)
    return np.diff(edges, prepend=0)


def language_sequence(shares: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """(total,) language id of each draw of an epoch: exact quotas (systematic_round), random order.

    Fixing the quotas per epoch instead of drawing each language independently keeps every epoch's
    language shares within one draw of the target; the order is still a uniform shuffle.
    """
    quotas = systematic_round(shares, total, rng.random())
    return rng.permutation(np.repeat(np.arange(len(quotas)), quotas))


def spread_over_strata(
    position_group: np.ndarray,
    stratum_group: np.ndarray,
    stratum_size: np.ndarray,
    epoch_draws: np.ndarray,
    max_repeats: float | None,
    rng: np.random.Generator,
) -> np.ndarray:
    """(K,) stratum of each draw: a group's draws split evenly over its strata that have rows.

    stratum_group (S,) is the group of each stratum, stratum_size (S,) its rows. epoch_draws[g] is how
    many draws group g gets per epoch; with max_repeats set, a stratum of few rows gets less than an
    even split so that none of its rows goes over the cap (cap_shares).
    """
    out = np.empty_like(position_group)
    for group in np.unique(position_group):
        where = np.flatnonzero(position_group == group)
        strata = np.flatnonzero((stratum_group == group) & (stratum_size > 0))
        shares = np.full(len(strata), 1.0 / len(strata))
        if max_repeats is not None:
            shares = cap_shares(shares, stratum_size[strata], float(epoch_draws[group]), max_repeats)
        quotas = systematic_round(shares, where.size, rng.random())
        out[where] = rng.permutation(np.repeat(strata, quotas))
    return out


def pick_items(
    position_stratum: np.ndarray, item_stratum: np.ndarray, item_draws: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """(K,) row drawn at each position, from the stratum named there (see least_drawn_first).

    Every stratum named in position_stratum must have rows.
    """
    n_strata = int(max(item_stratum.max(), position_stratum.max())) + 1
    size = np.bincount(item_stratum, minlength=n_strata)
    need = np.bincount(position_stratum, minlength=n_strata)
    if np.any((need > 0) & (size == 0)):
        raise ValueError(f"draws asked of empty strata {np.flatnonzero((need > 0) & (size == 0)).tolist()}")
    rows_by_stratum = np.argsort(_small_ints(item_stratum, n_strata), kind="stable")
    end = np.cumsum(size)
    chosen = [
        least_drawn_first(rows_by_stratum[end[s] - size[s] : end[s]], item_draws, int(need[s]), rng)
        for s in np.flatnonzero(need)
    ]
    out = np.empty(len(position_stratum), dtype=np.int64)
    out[np.argsort(_small_ints(position_stratum, n_strata), kind="stable")] = np.concatenate(chosen)
    return out


def least_drawn_first(rows: np.ndarray, item_draws: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """(k,) rows of one stratum in the order they are drawn: in passes, without replacement.

    Row i's r-th next draw gets the key level_i + r + U(0, 1) and the k smallest keys are drawn, so
    each pass goes over the rows in a fresh random order. level_i is 0 for a row behind the current
    pass (fewer draws than the stratum's most drawn row) and 1 otherwise: a row that joined the stratum
    with far fewer draws (reward buckets move rows) gets one turn ahead, not a run of draws.
    """
    draws = item_draws[rows]
    level = (draws >= draws.max()).astype(np.float64)
    rounds = -(-k // rows.size) + 1  # ceil(k / rows) passes, plus one for rows that start behind
    keys = (level + np.arange(rounds)[:, None] + rng.random((rounds, rows.size))).ravel()
    first = np.argpartition(keys, k - 1)[:k]  # rounds * rows > k keys, so k - 1 is in range
    first = first[np.argsort(keys[first])]
    return rows[first % rows.size]  # keys are laid out (round, row)


def _small_ints(values: np.ndarray, bound: int) -> np.ndarray:
    # numpy's stable argsort is a radix sort for 16-bit integers: ~3x faster than for int64 at 1e5 rows.
    return values.astype(np.int16) if bound < 2**15 else values
