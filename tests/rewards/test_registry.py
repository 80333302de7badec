"""The reward registry: names, closest-name errors, declared columns and parameters."""

from __future__ import annotations

import pytest

from mlgrpo.errors import UserError
from mlgrpo.rewards import REWARDS, get_reward, register, reward_names
from mlgrpo.rewards.registry import REQUIRED


def test_built_in_rewards_are_registered():
    assert reward_names() == ["chrf", "exact_match", "format", "language_consistency", "length", "numeric_answer",
                              "reward_model"]


TYPOS = [("exact_mach", "exact_match"), ("chrF", "chrf"), ("rewardmodel", "reward_model"),
         ("language_consistancy", "language_consistency")]


@pytest.mark.parametrize("typo, meant", TYPOS)
def test_unknown_name_suggests_the_closest(typo, meant):
    with pytest.raises(UserError, match=f"unknown reward '{typo}' \\(did you mean '{meant}'\\?\\)"):
        get_reward(typo)


def test_unknown_name_far_from_everything_lists_the_valid_ones():
    with pytest.raises(UserError) as info:
        get_reward("bleu")
    assert "did you mean" not in str(info.value) and "valid rewards: chrf, exact_match" in str(info.value)


def test_duplicates_are_rejected():
    with pytest.raises(ValueError, match="registered twice"):
        register("chrf")(lambda prompts, completions, **_: [])
    assert REWARDS["chrf"].func.__name__ == "chrf"


def test_declared_columns_and_parameters():
    assert get_reward("exact_match").requires == ("answers|reference",)
    assert get_reward("exact_match").columns == {"answers", "reference", "language"}
    assert get_reward("exact_match").params == {"answer_pattern": None}
    assert get_reward("chrf").params == {"char_order": 6, "word_order": 0, "beta": 2}
    assert get_reward("format").params["pattern"] is REQUIRED
    assert get_reward("reward_model").params["path"] is REQUIRED
    assert get_reward("language_consistency").requires == ("language",)
