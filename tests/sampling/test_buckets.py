import numpy as np
import pytest

from mlgrpo.sampling import reward_buckets

NAN = np.nan


@pytest.mark.parametrize(
    "rewards, expected",
    [
        # mid-rank quantiles: (#lower + #equal/2) / #seen
        ([0, 0, 0, 1], [0, 0, 0, 1]),  # q = .375 .375 .375 .875
        ([0, 1, 1, 1], [0, 1, 1, 1]),  # q = .125 .625 .625 .625
        ([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1]),  # q = .125 .375 .625 .875
        ([1, 1, 1, 1], [1, 1, 1, 1]),  # q = .5: all equal rewards share one bucket
        ([0.3, NAN, 0.1, NAN], [1, 2, 0, 2]),  # unseen prompts: bucket n_buckets = 2
    ],
)
def test_two_buckets_hand_worked(rewards, expected):
    assert reward_buckets(np.array(rewards, dtype=float), np.zeros(len(rewards), int), 2).tolist() == expected


def test_quantiles_are_taken_within_each_group():
    # group 0: .1 (q .25 -> 0), .9 (q .75 -> 1); group 1: .2 (q .25 -> 0), .5 (q .75 -> 1).
    # Pooled, .5 would fall in the lower half with .1 and .2; per group it is the better of its two.
    buckets = reward_buckets(np.array([0.9, 0.1, 0.5, 0.2]), np.array([0, 0, 1, 1]), 2)
    assert buckets.tolist() == [1, 0, 1, 0]


def test_nothing_seen_puts_everything_in_the_unseen_bucket():
    assert reward_buckets(np.full(3, NAN), np.zeros(3, int), 4).tolist() == [4, 4, 4]


def reference_buckets(rewards, groups, n_buckets):
    """The definition, one prompt at a time."""
    out = []
    for value, group in zip(rewards, groups):
        if np.isnan(value):
            out.append(n_buckets)
            continue
        peers = [v for v, g in zip(rewards, groups) if g == group and not np.isnan(v)]
        lower = sum(v < value for v in peers)
        equal = sum(v == value for v in peers)
        out.append(min(int((lower + equal / 2) / len(peers) * n_buckets), n_buckets - 1))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_equals_the_one_prompt_at_a_time_definition(seed):
    rng = np.random.default_rng(seed)
    rewards = rng.integers(0, 5, 200) / 4.0  # few distinct values: many ties, as GRPO rewards have
    rewards[rng.random(200) < 0.2] = NAN
    groups = rng.integers(0, 3, 200)
    n_buckets = int(rng.integers(1, 6))
    assert reward_buckets(rewards, groups, n_buckets).tolist() == reference_buckets(rewards, groups, n_buckets)
