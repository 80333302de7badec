"""Reward buckets: which difficulty stratum a prompt is in, from the rewards it earned in earlier steps.

A pure function of per-prompt mean rewards (NaN for a prompt never rolled out) and a group id per
prompt (its language). Knows nothing about models, rollouts, TRL or MLflow.
"""

from __future__ import annotations

import numpy as np


def reward_buckets(mean_reward: np.ndarray, groups: np.ndarray, n_buckets: int) -> np.ndarray:
    """(N,) bucket of each prompt: 0..n_buckets-1 by reward quantile within its group, n_buckets if unseen.

    mean_reward (N,) float, NaN where a prompt has no reward yet; groups (N,) int, e.g. language ids.
    A prompt's quantile is its mid-rank among the seen prompts of its group,
    q = (#lower + #equal / 2) / #seen, and its bucket floor(q * n_buckets). The mid-rank keeps equal
    rewards in one bucket and still splits the common case of rewards that are mostly 0 or 1:
    [0, 0, 0, 1] with 2 buckets gives q = .375 .375 .375 .875 -> buckets 0 0 0 1, where quantile cut
    points would put all four in one bucket.
    """
    mean_reward = np.asarray(mean_reward, dtype=np.float64)
    groups = np.asarray(groups)
    out = np.full(mean_reward.shape, n_buckets, dtype=np.int64)
    seen = np.flatnonzero(~np.isnan(mean_reward))
    if seen.size == 0:
        return out
    # Sorted by group, then reward: a sort by reward, then a stable (radix, on small ints) sort by group
    # take a fifth of np.lexsort's time at 1e5 prompts, and this runs after every step.
    by_value = np.argsort(mean_reward[seen])
    g_by_value = groups[seen][by_value]
    if 0 <= g_by_value.min() and g_by_value.max() < 2**15:
        g_by_value = g_by_value.astype(np.int16)
    order = by_value[np.argsort(g_by_value, kind="stable")]
    g, v = groups[seen][order], mean_reward[seen][order]
    n = len(order)
    new_group = np.concatenate(([True], g[1:] != g[:-1]))
    new_value = new_group | np.concatenate(([True], v[1:] != v[:-1]))
    group_start = np.flatnonzero(new_group)
    group_size = np.diff(group_start, append=n)
    value_start = np.flatnonzero(new_value)
    value_size = np.diff(value_start, append=n)
    group_of = np.cumsum(new_group) - 1
    value_of = np.cumsum(new_value) - 1
    lower = value_start[value_of] - group_start[group_of]
    quantile = (lower + 0.5 * value_size[value_of]) / group_size[group_of]
    out[seen[order]] = np.minimum((quantile * n_buckets).astype(np.int64), n_buckets - 1)
    return out
