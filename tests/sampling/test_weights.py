import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlgrpo.errors import UserError
from mlgrpo.sampling import WEIGHTS, SamplerConfig, cap_shares, register_weights, target_shares

COUNTS = {"en": 400, "ru": 100, "sw": 25}


def test_uniform_is_the_share_of_rows():
    # 400 / 525 = 16/21, 100 / 525 = 4/21, 25 / 525 = 1/21
    shares = WEIGHTS["uniform"](COUNTS, SamplerConfig())
    assert shares == pytest.approx({"en": 16 / 21, "ru": 4 / 21, "sw": 1 / 21})


def test_balanced_gives_each_language_one_share():
    assert WEIGHTS["balanced"](COUNTS, SamplerConfig(name="balanced")) == pytest.approx(dict.fromkeys(COUNTS, 1 / 3))


def test_temperature_is_counts_to_the_alpha():
    # alpha = 0.5: sqrt(400) = 20, sqrt(100) = 10, sqrt(25) = 5; 20 + 10 + 5 = 35 -> 4/7, 2/7, 1/7
    shares = WEIGHTS["temperature"](COUNTS, SamplerConfig(name="temperature", alpha=0.5))
    assert shares == pytest.approx({"en": 4 / 7, "ru": 2 / 7, "sw": 1 / 7})


def test_temperature_alpha_one_is_uniform():
    config = SamplerConfig(name="temperature", alpha=1.0)
    assert WEIGHTS["temperature"](COUNTS, config) == pytest.approx(WEIGHTS["uniform"](COUNTS, config))


def test_oversample_weighs_each_named_row_factor_times():
    # sw rows weigh 4: 400, 100, 25 * 4 = 100; total 600 -> 2/3, 1/6, 1/6
    shares = WEIGHTS["oversample"](COUNTS, SamplerConfig(name="oversample", oversample={"sw": 4.0}))
    assert shares == pytest.approx({"en": 2 / 3, "ru": 1 / 6, "sw": 1 / 6})


def test_oversample_of_a_language_without_rows_says_which():
    config = SamplerConfig(name="oversample", oversample={"sw": 2.0, "xx": 3.0})
    with pytest.raises(UserError, match=r"oversample names 'xx', but the data has no rows .* en, ru, sw"):
        WEIGHTS["oversample"](COUNTS, config)


@pytest.mark.parametrize("name", sorted(WEIGHTS))
def test_a_language_with_no_rows_is_an_error_for_every_weighting(name):
    config = SamplerConfig(name=name, oversample={"en": 2.0} if name == "oversample" else {})
    with pytest.raises(UserError, match="language 'sw' has no rows"):
        WEIGHTS[name]({"en": 10, "sw": 0}, config)


def test_cap_moves_share_to_languages_under_their_limit():
    # 600 / 150 / 30 rows, balanced (1/3 each), 780 draws, at most 2 repeats per row.
    # Limits: en 2*600/780, ru 2*150/780 = 5/13, sw 2*30/780 = 1/13. sw is over: pinned at 1/13;
    # en and ru share 12/13 evenly, 6/13 each: ru is over 5/13, pinned; en gets 1 - 1/13 - 5/13 = 7/13.
    shares = cap_shares(np.full(3, 1 / 3), np.array([600, 150, 30]), 780, 2.0)
    assert shares == pytest.approx([7 / 13, 5 / 13, 1 / 13])


def test_cap_that_binds_nowhere_changes_nothing():
    assert cap_shares(np.array([0.5, 0.5]), np.array([100, 100]), 200, 1.0) == pytest.approx([0.5, 0.5])


def test_cap_too_low_to_fill_the_epoch_is_an_error():
    with pytest.raises(UserError, match="allows at most 200 draws per epoch from 100 rows, but 300 are asked"):
        cap_shares(np.array([0.5, 0.5]), np.array([50, 50]), 300, 2.0)


def test_target_shares_applies_the_cap_to_any_weighting():
    config = SamplerConfig(name="balanced", max_repeats_per_item=2)
    shares = target_shares({"en": 600, "ru": 150, "sw": 30}, config, draws=780)
    assert shares == pytest.approx({"en": 7 / 13, "ru": 5 / 13, "sw": 1 / 13})


@settings(max_examples=60, deadline=None)  # no deadline: the machine is shared, timings vary
@given(
    counts=st.lists(st.integers(1, 10_000), min_size=1, max_size=8),
    cap=st.one_of(st.none(), st.floats(1.0, 20.0)),
    alpha=st.floats(0.05, 2.0),
)
def test_every_weighting_gives_positive_shares_summing_to_one_under_the_cap(counts, cap, alpha):
    named = {f"l{i}": n for i, n in enumerate(counts)}
    draws = sum(counts)
    for name in WEIGHTS:
        config = SamplerConfig(name=name, alpha=alpha, max_repeats_per_item=cap,
                               oversample={"l0": 3.0} if name == "oversample" else {})
        shares = target_shares(named, config, draws)
        assert math.isclose(sum(shares.values()), 1.0, abs_tol=1e-9)
        assert all(s > 0 for s in shares.values())
        if cap is not None:
            assert all(shares[lang] * draws / named[lang] <= cap * (1 + 1e-9) for lang in named)


def test_registry_rejects_a_second_weighting_under_a_taken_name():
    with pytest.raises(ValueError, match="'uniform' is already registered"):
        register_weights("uniform")(lambda counts, config: {})


def test_a_registered_weighting_is_found_by_name(monkeypatch):
    monkeypatch.setattr("mlgrpo.sampling.weights.WEIGHTS", WEIGHTS.copy())
    from mlgrpo.sampling import weights

    @register_weights("three_to_one_test")
    def three_to_one(counts, config):
        first = sorted(counts)[0]
        return {lang: 0.75 if lang == first else 0.25 for lang in counts}

    assert "three_to_one_test" in weights.WEIGHTS and "three_to_one_test" not in WEIGHTS
    shares = target_shares({"a": 1, "b": 1}, SamplerConfig(name="three_to_one_test"), draws=2)
    assert shares == {"a": 0.75, "b": 0.25}
