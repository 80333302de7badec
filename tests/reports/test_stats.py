"""mlgrpo.reports.stats: hand-worked numbers, loop references, NaN handling, coverage, determinism."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from mlgrpo.reports.stats import (
    bootstrap_ci,
    count_nonfinite,
    curve_band,
    holm,
    paired_difference,
    resampled_means,
    steps_to_fraction,
    volatility,
)

nan = math.nan


def test_import_is_numpy_only():
    code = "import sys, mlgrpo.reports.stats\nprint(' '.join(m for m in ('torch', 'mlflow', 'pandas') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"importing mlgrpo.reports.stats imported {out}"


# ---------------------------------------------------------------- bootstrap_ci


def test_constant_scores_give_a_zero_width_interval():
    iv = bootstrap_ci(np.full((3, 10), 0.5), n_boot=200)
    assert (iv.mean, iv.low, iv.high) == (0.5, 0.5, 0.5)
    assert (iv.n_seeds, iv.n_items, iv.seeds_resampled, iv.level) == (3, 10, True, 0.95)


def test_mean_weighs_seeds_equally_and_skips_nan():
    # seed 0: nanmean(1, 3) = 2; seed 1: 5 -> (2 + 5) / 2 = 3.5 (the pooled mean (1+3+5)/3 = 3 is not it).
    # Item 2 is NaN in every seed: not applicable, so n_items = 2.
    iv = bootstrap_ci([[1.0, 3.0, nan], [5.0, nan, nan]], n_boot=200)
    assert iv.mean == 3.5 and (iv.n_seeds, iv.n_items) == (2, 2)
    assert 1.0 <= iv.low <= iv.mean <= iv.high <= 5.0


def test_no_valid_value_gives_nan_without_raising():
    iv = bootstrap_ci(np.full((2, 4), nan))
    assert math.isnan(iv.mean) and math.isnan(iv.low) and math.isnan(iv.high)
    assert (iv.n_seeds, iv.n_items, iv.seeds_resampled) == (0, 0, False)


def test_single_seed_resamples_items_only_and_says_so():
    x = np.arange(20.0)
    iv = bootstrap_ci(x[None, :], n_boot=500, seed=3)
    assert not iv.seeds_resampled and iv.n_seeds == 1
    assert iv.mean == 9.5 and iv.low < 9.5 < iv.high  # mean(0..19) = 190 / 20
    assert bootstrap_ci(x, n_boot=500, seed=3) == iv  # 1-D reads as one seed
    # A seed that is all NaN does not count as a second seed.
    assert not bootstrap_ci(np.stack([x, np.full(20, nan)]), n_boot=50).seeds_resampled


def test_resampled_means_hand_worked():
    x = np.array([[1.0, 2.0], [3.0, nan]])
    # seeds (1, 1), items (0, 0): both drawn seeds read [3, 3] -> 3.
    # seeds (0, 1), items (1, 1): seed 0 reads [2, 2] -> 2; seed 1 reads [nan, nan] -> skipped -> 2.
    # seeds (0, 0), items (0, 1): seed 0 twice, mean (1 + 2) / 2 = 1.5.
    # seeds (1, 1), items (1, 1): nothing applicable -> NaN.
    seed_idx = np.array([[1, 1], [0, 1], [0, 0], [1, 1]])
    item_idx = np.array([[0, 0], [1, 1], [0, 1], [1, 1]])
    np.testing.assert_array_equal(resampled_means(x, seed_idx, item_idx), [3.0, 2.0, 1.5, nan])


def test_resampled_means_equals_a_loop_over_replicates():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4, 9))
    x[rng.random(x.shape) < 0.3] = nan
    seed_idx, item_idx = rng.integers(0, 4, (50, 4)), rng.integers(0, 9, (50, 9))
    expected = []
    for s, i in zip(seed_idx, item_idx):
        per_seed = [np.nanmean(x[k, i]) for k in s if not np.isnan(x[k, i]).all()]
        expected.append(np.mean(per_seed) if per_seed else nan)
    np.testing.assert_allclose(resampled_means(x, seed_idx, item_idx), expected, rtol=1e-12)


def test_interval_covers_the_true_mean_in_about_95_percent_of_simulations():
    # 4 seeds x 40 shared prompts: prompt difficulty (sd 1) + seed offset (sd 0.1) + noise (sd 0.5), true mean 2.
    rng = np.random.default_rng(2024)
    hits = 0
    for i in range(200):
        x = 2.0 + rng.normal(0, 1.0, 40) + rng.normal(0, 0.1, (4, 1)) + rng.normal(0, 0.5, (4, 40))
        iv = bootstrap_ci(x, n_boot=400, seed=i)
        hits += iv.low <= 2.0 <= iv.high
    assert 0.90 <= hits / 200 <= 0.99


def test_same_seed_same_interval_and_bad_input_is_named():
    x = np.random.default_rng(0).normal(size=(3, 15))
    assert bootstrap_ci(x, seed=5) == bootstrap_ci(x, seed=5)
    assert bootstrap_ci(x, seed=5).low != bootstrap_ci(x, seed=6).low
    with pytest.raises(ValueError, match="scores has 1 infinite value"):
        bootstrap_ci([[1.0, math.inf]])
    with pytest.raises(ValueError, match="2-D"):
        bootstrap_ci(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci(x, level=95)


# ---------------------------------------------------------------- paired_difference


def test_constant_plus_one_difference():
    # Quarter steps are exact in binary floats, so (b + 1) - b is exactly 1 on all 4 x 10 = 40 pairs.
    b = np.random.default_rng(1).integers(0, 5, (4, 10)) * 0.25
    diff = paired_difference(b + 1.0, b, n_boot=300, n_perm=999)
    assert (diff.mean, diff.low, diff.high) == (1.0, 1.0, 1.0)
    # 2**40 flip patterns > 999 -> random flips; only all-equal signs reach |stat| = 1 (chance 2**-39 each),
    # so the count is 0 and p = (0 + 1) / (999 + 1).
    assert diff.p_value == 1 / 1000
    assert (diff.n_pairs, diff.n_dropped, diff.n_seeds, diff.seeds_resampled) == (40, 0, 4, True)


def test_exact_sign_flip_p_values():
    # d = [1, 2, 3] (one seed): observed mean 2, sum 6. The 8 sums of +-1 +-2 +-3 are 6, 4, 2, 0, 0, -2, -4, -6;
    # |sum| >= 6 for 2 of them -> p = 2 / 8 = 0.25 (exact: 2**3 <= n_perm).
    d = paired_difference([[1.0, 2.0, 3.0]], [[0.0, 0.0, 0.0]], n_boot=100)
    assert d.mean == 2.0 and d.p_value == 0.25
    # d = [1, 1, 1, -1]: observed sum 2. Four +-1 terms sum to 0 in C(4, 2) = 6 of 16 patterns and to
    # +-2 or +-4 in the other 10 -> p = 10 / 16 = 0.625.
    assert paired_difference([1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], n_boot=100).p_value == 0.625


def test_all_zero_differences_give_p_one():
    x = np.random.default_rng(2).normal(size=(2, 30))
    diff = paired_difference(x, x.copy(), n_boot=100)
    assert (diff.mean, diff.low, diff.high, diff.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_nan_pairs_are_dropped_and_counted():
    a = np.array([[nan, 2.0, 4.0], [1.0, 3.0, nan]])
    b = np.array([[1.0, 1.0, 1.0], [0.0, nan, nan]])
    # kept pairs: (0,1) 2-1=1, (0,2) 4-1=3, (1,0) 1-0=1. Seed means: (1+3)/2 = 2 and 1 -> (2 + 1) / 2 = 1.5.
    # Dropped: (0,0) and (1,1) have one NaN each; (1,2) is NaN in both arms (not applicable, not dropped).
    diff = paired_difference(a, b, n_boot=100)
    assert diff.mean == 1.5 and (diff.n_pairs, diff.n_dropped) == (3, 2)
    # 3 pairs -> exact test; weights 1/4, 1/4, 1/2 on d = 1, 3, 1: stat = 0.25 + 0.75 + 0.5 = 1.5. The 8 flips
    # give |stat| in {1.5, 1.0, 0.5, 0, ...}; only the all-equal ones reach 1.5 -> p = 2 / 8.
    assert diff.p_value == 0.25


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match=r"same shape \(seeds, items\), got \(2, 3\) and \(2, 4\)"):
        paired_difference(np.zeros((2, 3)), np.zeros((2, 4)))


def test_paired_difference_is_deterministic_and_random_flips_agree_with_exact():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.3, 1, (1, 12)), rng.normal(0, 1, (1, 12))
    assert paired_difference(a, b, seed=9) == paired_difference(a, b, seed=9)
    exact = paired_difference(a, b, n_boot=50, n_perm=4096).p_value  # 2**12 = 4096 -> enumerated
    sampled = paired_difference(a, b, n_boot=50, n_perm=4095, seed=1).p_value  # 4096 > 4095 -> random
    assert abs(exact - sampled) < 0.03  # 3 binomial sd at n_perm ~ 4000 is < 0.025


# ---------------------------------------------------------------- holm


def test_holm_hand_worked():
    # m = 4, sorted p: 0.005 (#3), 0.01 (#0), 0.03 (#2), 0.04 (#1)
    # times (m - rank): 4*0.005 = 0.02, 3*0.01 = 0.03, 2*0.03 = 0.06, 1*0.04 = 0.04
    # running max:      0.02, 0.03, 0.06, 0.06 -> back in input order [0.03, 0.06, 0.06, 0.02]
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    # NaN passes through and m = 2: 2*0.01 = 0.02, 1*0.04 = 0.04.
    np.testing.assert_allclose(holm([0.01, nan, 0.04]), [0.02, nan, 0.04], rtol=1e-12)
    # Capped at 1: 2*0.5 = 1.0, then max(1.0, 0.6) = 1.0.
    np.testing.assert_array_equal(holm([0.6, 0.5]), [1.0, 1.0])
    assert holm([]).shape == (0,)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.5])


def test_holm_equals_a_loop_reference():
    p = np.random.default_rng(4).random(9) ** 3
    order = sorted(range(9), key=lambda i: p[i])
    expected, running = np.empty(9), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (9 - rank) * p[i]))
        expected[i] = running
    np.testing.assert_allclose(holm(p), expected, rtol=1e-12)


# ---------------------------------------------------------------- training curves


def test_curve_band_hand_worked():
    band = curve_band([[1.0, 2.0, nan, 5.0], [3.0, nan, nan, 6.0], [2.0, nan, nan, 7.0]])
    # step 0: values 1, 3, 2 -> mean 2, sd = sqrt((1 + 1 + 0) / 2) = 1, half = t(0.975, df 2) * 1 / sqrt(3)
    #         = 4.302653 / 1.732051 = 2.484138; step 3: 5, 6, 7 -> mean 6, same sd and half.
    # step 1: one seed -> mean 2, no band (NaN); step 2: no seed -> all NaN.
    np.testing.assert_allclose(band.mean, [2.0, 2.0, nan, 6.0])
    np.testing.assert_allclose(band.low, [2.0 - 2.484138, nan, nan, 6.0 - 2.484138], atol=1e-6)
    np.testing.assert_allclose(band.high, [2.0 + 2.484138, nan, nan, 6.0 + 2.484138], atol=1e-6)
    mean, low, high = curve_band([[1.0, 2.0]])  # a single seed: mean only
    assert mean.tolist() == [1.0, 2.0] and np.isnan(low).all() and np.isnan(high).all()


def test_volatility_hand_worked():
    # diffs of [1, 2, 4, 7] are [1, 2, 3]: mean 2, std ddof=1 = sqrt((1 + 0 + 1) / 2) = 1.
    assert volatility([1.0, 2.0, 4.0, 7.0]) == 1.0
    assert volatility([1.0, nan, 2.0, 4.0, nan, 7.0]) == 1.0  # NaN removed, gaps bridged
    assert math.isnan(volatility([1.0, nan, 2.0]))  # 2 valid points
    assert volatility([3.0, 3.0, 3.0]) == 0.0


def test_steps_to_fraction_hand_worked():
    steps = [0, 10, 20, 30, 40, 50]
    # rising: start 0, final = mean(10, 10) = 10 (tail 2), target 0 + 0.9 * 10 = 9 -> first value >= 9 at step 30
    assert steps_to_fraction(steps, [0, 5, 8, 9, 10, 10], tail=2) == 30
    # falling (a loss): start 10, final = mean(2, 2, 2) = 2, target 10 + 0.9 * (2 - 10) = 2.8 -> first <= 2.8 at 30
    assert steps_to_fraction(steps, [10, 6, 3, 2, 2, 2]) == 30
    # fraction 0.5: target 10 - 4 = 6 -> step 10
    assert steps_to_fraction(steps, [10, 6, 3, 2, 2, 2], fraction=0.5) == 10
    assert steps_to_fraction(steps, [5, 5, 5, 5, 5, 5]) == 0  # flat: final == start -> first step
    # leading NaN: start 1, final 3 (tail 1), target 1 + 0.9 * 2 = 2.8 -> step 3
    assert steps_to_fraction([0, 1, 2, 3], [nan, 1, 2, 3], tail=1) == 3
    # samples to reach: pass cumulative samples as steps; an early spike counts as reaching
    assert steps_to_fraction([64, 128, 192, 256], [0.0, 1.0, 0.2, 0.5], tail=1) == 128
    assert steps_to_fraction([0, 1], [nan, nan]) is None
    with pytest.raises(ValueError, match="same length"):
        steps_to_fraction([0, 1, 2], [1.0, 2.0])


def test_count_nonfinite():
    assert count_nonfinite([1.0, nan, math.inf, -math.inf, 2.0]) == 3
    assert count_nonfinite(np.zeros((2, 3))) == 0


def test_rolling_mean_by_hand():
    from mlgrpo.reports.stats import rolling_mean

    # window 2: [1] -> 1; [1, 3] -> 2; [3, NaN] -> 3; [NaN, 5] -> 5
    np.testing.assert_allclose(rolling_mean([[1.0, 3.0, np.nan, 5.0]], 2), [[1.0, 2.0, 3.0, 5.0]])
    np.testing.assert_allclose(rolling_mean([[1.0, 2.0]], 1), [[1.0, 2.0]])
    assert np.isnan(rolling_mean([[np.nan, np.nan, 1.0]], 2)[0, 1])
