"""RewardSpec and RewardConfig: typed, validated, parsed from the YAML shape with helpful errors."""

from __future__ import annotations

import math

import pytest

from mlgrpo.errors import UserError
from mlgrpo.rewards import LanguageAffine, RewardConfig, RewardSpec
from mlgrpo.rewards.config import RewardClip

YAML_SHAPE = {
    "on_bad_reward": "fail",
    "rewards": [
        {"name": "exact_match"},
        {"name": "format", "label": "think_format", "weight": 0.5, "params": {"pattern": "<think>.*</think>.*"}},
        {"name": "chrf", "weight": 2, "per_language": {"SW": {"scale": 0.2, "offset": -0.5}}},
    ],
}


def test_clip_maps_one_to_one_and_defaults_to_none():
    config = RewardConfig.from_dict({"rewards": [{"name": "chrf", "clip": {"lower_quantile": 0.05, "max": 1.0}},
                                                 {"name": "exact_match"}]})
    assert config.rewards[0].clip == RewardClip(max=1.0, lower_quantile=0.05)
    assert config.rewards[1].clip is None


def test_from_dict_maps_one_to_one():
    config = RewardConfig.from_dict(YAML_SHAPE)
    assert config.on_bad_reward == "fail"
    assert [s.display_name for s in config.rewards] == ["exact_match", "think_format", "chrf"]
    assert [s.weight for s in config.rewards] == [1.0, 0.5, 2]
    assert config.rewards[1].params == {"pattern": "<think>.*</think>.*"}
    assert config.rewards[2].per_language == {"sw": LanguageAffine(scale=0.2, offset=-0.5)}
    assert config.rewards[2].requires == ("reference", "language")  # the transform reads `language`


@pytest.mark.parametrize(
    "data, message",
    [
        ({"rewards": [{"name": "chrf", "wieght": 1}]},
         r"rewards\[0\]: unknown key 'wieght' \(did you mean 'weight'\?\)"),
        ({"reward": []}, r"unknown key 'reward' \(did you mean 'rewards'\?\)"),
        ({"rewards": [{"name": "chrf", "params": {"char_ordr": 4}}]},
         r"unknown parameter 'char_ordr' \(did you mean 'char_order'\?\)"),
        ({"rewards": [{"name": "chrf", "per_language": {"sw": {"scal": 2}}}]},
         r"per_language.sw: unknown key 'scal' \(did you mean 'scale'\?\)"),
        ({"rewards": [{"name": "chrf", "per_language": {"sw": {"scale": math.inf}}}]}, "scale must be a finite number"),
        ({"rewards": [{"name": "chrff"}]}, r"rewards\[0\]: unknown reward 'chrff' \(did you mean 'chrf'\?\)"),
        ({"rewards": [{"weight": 1}]}, "each reward needs a name"),
        ({"rewards": []}, "at least one reward"),
        ({"rewards": "chrf"}, "rewards must be a list"),
        ({"rewards": [{"name": "chrf"}], "on_bad_reward": "zeroes"}, r"\(did you mean 'zero'\?\)"),
        ({"rewards": [{"name": "chrf"}, {"name": "chrf"}]},
         "two rewards are named 'chrf'; give one a distinct `label`"),
        ({"rewards": [{"name": "chrf", "clip": {"maximum": 1}}]}, r"rewards\[0\]: clip: unknown key 'maximum' "
                                                                   r"\(did you mean 'max'\?\)"),
        ({"rewards": [{"name": "chrf", "clip": {}}]}, "clip: give min and/or max"),
        ({"rewards": [{"name": "chrf", "clip": {"min": 1, "max": 0}}]}, r"clip.min \(1\) must be below clip.max"),
        ({"rewards": [{"name": "chrf", "clip": {"upper_quantile": 95}}]}, r"clip.upper_quantile must be in \[0, 1\]"),
        ({"rewards": [{"name": "chrf", "clip": {"max": math.nan}}]}, "clip.max must be a finite number"),
    ],
)
def test_errors_say_what_and_where(data, message):
    with pytest.raises(UserError, match=message):
        RewardConfig.from_dict(data)


def test_spec_validation():
    with pytest.raises(UserError, match="weight must be a finite number"):
        RewardSpec("chrf", weight=math.nan)
    with pytest.raises(UserError, match="label may use only"):
        RewardSpec("chrf", label="chrf/de")
    assert RewardSpec("chrf", weight=-1).weight == -1  # a penalty is fine
    # The same reward twice is fine under two labels.
    config = RewardConfig((RewardSpec("chrf"), RewardSpec("chrf", label="chrf_pp", params={"word_order": 2})))
    assert [s.display_name for s in config.rewards] == ["chrf", "chrf_pp"]
