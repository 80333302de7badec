import numpy as np
import pytest

from mlgrpo.sampling.draws import language_sequence, pick_items, spread_over_strata, systematic_round


def test_systematic_round_hand_worked():
    # 7 * cumsum(.5, .3, .2) = 3.5, 5.6, 7.0
    assert systematic_round(np.array([0.5, 0.3, 0.2]), 7, 0.5).tolist() == [4, 2, 1]  # floor(4.0, 6.1, 7.5)
    assert systematic_round(np.array([0.5, 0.3, 0.2]), 7, 0.0).tolist() == [3, 2, 2]  # floor(3.5, 5.6, 7.0)


def test_systematic_round_is_unbiased_and_each_count_is_floor_or_ceiling():
    shares = np.array([0.61, 0.3, 0.06, 0.03])
    grid = (np.arange(1000) + 0.5) / 1000  # u spread evenly over [0, 1)
    counts = np.array([systematic_round(shares, 37, u) for u in grid])
    assert (counts.sum(axis=1) == 37).all()
    assert ((counts == np.floor(37 * shares)) | (counts == np.ceil(37 * shares))).all()
    np.testing.assert_allclose(counts.mean(axis=0), 37 * shares, atol=1e-3)


def test_language_sequence_has_exact_quotas_in_random_order():
    a = language_sequence(np.array([0.75, 0.25]), 100, np.random.default_rng(0))
    b = language_sequence(np.array([0.75, 0.25]), 100, np.random.default_rng(1))
    assert np.bincount(a).tolist() == [75, 25] == np.bincount(b).tolist()
    assert not np.array_equal(a, b)


def test_rows_are_drawn_in_passes_without_replacement():
    drawn = pick_items(np.zeros(12, int), np.zeros(5, int), np.zeros(5, int), np.random.default_rng(0))
    assert sorted(drawn[:5]) == [0, 1, 2, 3, 4] and sorted(drawn[5:10]) == [0, 1, 2, 3, 4]
    assert len(set(drawn[10:])) == 2
    assert not np.array_equal(drawn[:5], drawn[5:10]), "each pass should be reshuffled"


def test_rows_behind_in_the_pass_come_first():
    # rows 2 and 3 have one draw fewer than the others: the next two draws are theirs
    drawn = pick_items(np.zeros(2, int), np.zeros(5, int), np.array([1, 1, 0, 0, 1]), np.random.default_rng(0))
    assert sorted(drawn) == [2, 3]


@pytest.mark.parametrize("seed", range(5))
def test_a_row_far_behind_gets_one_turn_ahead_not_a_run(seed):
    # Row 2 moved into this stratum with 0 draws where the others have 5. Least-drawn-first on raw counts
    # would give it the next 3 draws; its level is raised to 5 - 1 = 4: it goes first, then joins the pass.
    drawn = pick_items(np.zeros(3, int), np.zeros(3, int), np.array([5, 5, 0]), np.random.default_rng(seed))
    assert drawn[0] == 2 and (drawn == 2).sum() <= 2


def test_each_position_gets_a_row_of_its_stratum():
    item_stratum = np.array([0, 1, 0, 2, 1, 0])
    positions = np.array([2, 0, 1, 1, 0, 2, 0, 0])
    drawn = pick_items(positions, item_stratum, np.zeros(6, int), np.random.default_rng(0))
    assert (item_stratum[drawn] == positions).all()


def test_drawing_from_an_empty_stratum_is_refused():
    with pytest.raises(ValueError, match=r"empty strata \[1\]"):
        pick_items(np.array([1]), np.array([0, 2]), np.zeros(2, int), np.random.default_rng(0))


def test_spread_splits_a_group_evenly_over_its_strata_with_rows():
    # group 0: strata 0 (1 row) and 1 (3 rows); group 1: strata 2, 3, 4 (no rows) and 5 (1 row)
    stratum_group, stratum_size = np.array([0, 0, 1, 1, 1, 1]), np.array([1, 3, 0, 0, 0, 1])
    positions = np.array([0] * 10 + [1] * 4)
    strata = spread_over_strata(positions, stratum_group, stratum_size, np.array([10.0, 4.0]), None,
                                np.random.default_rng(0))
    assert np.bincount(strata[:10]).tolist() == [5, 5] and (strata[10:] == 5).all()


def test_spread_respects_the_repeat_cap():
    # 10 draws of group 0 per epoch, cap 3: an even split gives the 1-row stratum 5 draws; it may take
    # 3 (share .3), and the 3-row stratum takes the other 7 (share .7, 7/3 repeats per row)
    strata = spread_over_strata(np.zeros(10, int), np.array([0, 0]), np.array([1, 3]), np.array([10.0]), 3.0,
                                np.random.default_rng(0))
    assert np.bincount(strata).tolist() == [3, 7]
