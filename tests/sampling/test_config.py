import math

import pytest

from mlgrpo.errors import UserError
from mlgrpo.sampling import SamplerConfig


def test_defaults_are_valid():
    config = SamplerConfig()
    assert (config.name, config.alpha, config.reward_buckets, config.max_repeats_per_item) == ("uniform", 0.3, 0, None)


@pytest.mark.parametrize("alpha", [0, -0.5, math.nan, math.inf, "0.3", True])
def test_alpha_must_be_a_positive_number(alpha):
    with pytest.raises(UserError, match="alpha must be a number > 0"):
        SamplerConfig(name="temperature", alpha=alpha)


def test_unknown_name_suggests_the_closest():
    with pytest.raises(UserError, match=r"sampler name: unknown language weighting 'balance' \(did you mean 'balanced'\?\)"):
        SamplerConfig(name="balance")


def test_oversample_needs_languages_and_only_goes_with_its_sampler():
    with pytest.raises(UserError, match="needs at least one language"):
        SamplerConfig(name="oversample")
    with pytest.raises(UserError, match="only read by the sampler named 'oversample', not 'balanced'"):
        SamplerConfig(name="balanced", oversample={"sw": 2.0})


@pytest.mark.parametrize("factor", [0, -1.0, math.nan, "2"])
def test_oversample_factor_must_be_positive(factor):
    with pytest.raises(UserError, match="oversample factor for 'sw'"):
        SamplerConfig(name="oversample", oversample={"sw": factor})


@pytest.mark.parametrize("cap", [0, 0.5, math.inf])
def test_repeat_cap_below_one_cannot_fill_an_epoch(cap):
    with pytest.raises(UserError, match="max_repeats_per_item must be a number >= 1"):
        SamplerConfig(max_repeats_per_item=cap)


@pytest.mark.parametrize("key, value", [("seed", -1), ("seed", 1.5), ("reward_buckets", True), ("reward_buckets", -2)])
def test_integer_fields(key, value):
    with pytest.raises(UserError, match=f"sampler {key} must be an integer >= 0"):
        SamplerConfig(**{key: value})


def test_prompts_per_epoch():
    assert SamplerConfig(prompts_per_epoch=10).prompts_per_epoch == 10
    with pytest.raises(UserError, match="prompts_per_epoch must be an integer >= 1"):
        SamplerConfig(prompts_per_epoch=0)
