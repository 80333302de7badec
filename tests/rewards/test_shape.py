"""length and format: hand-worked values in several scripts."""

from __future__ import annotations

import pytest

from mlgrpo.errors import UserError
from mlgrpo.rewards import RewardSpec, build_reward_functions
from mlgrpo.rewards.shape import format_match, length, length_ratio_penalty


def test_length_hand_worked_across_scripts():
    completions = ["北京市", "北京是中国的首都城市", "مرحبا بك يا", "मरहबा", ""]
    references = ["北京", "北京", "مرحبا", "नमस्ते", "hello"]
    # 北京市 3 / 2 = 1.5, inside [0.5, 2] -> 0.
    # 10 / 2 = 5 -> (5 - 2) / 2 = 1.5, floored at -1.
    # "مرحبا بك يا" = 5 + 1 + 2 + 1 + 2 = 11 code points, / 5 = 2.2 -> -(0.2 / 2) = -0.1.
    # "मरहबा" has 5 code points, "नमस्ते" 6 (म, न, स, ्, त, े): 5/6 is inside the range -> 0.
    # An empty completion is ratio 0 -> -(0.5 / 0.5) = -1.
    got = length([""] * 5, completions, reference=references)
    assert got == pytest.approx([0.0, -1.0, -0.1, 0.0, -1.0])


def test_length_custom_range_and_missing_reference():
    # Range [0.8, 1.2] of "hello" (5): "hell" is 0.8 -> 0; "hel" is 0.6 -> -(0.2 / 0.8) = -0.25.
    got = length([""] * 3, ["hell", "hel", "x"], reference=["hello", "hello", " "], min_ratio=0.8, max_ratio=1.2)
    assert got[:2] == pytest.approx([0.0, -0.25])
    assert got[2] is None  # a blank reference is no reference


def test_length_penalty_is_bounded_and_zero_inside():
    for n in range(0, 60):
        assert -1.0 <= length_ratio_penalty(n, 10, 0.5, 2.0) <= 0.0
    assert [length_ratio_penalty(n, 10, 0.5, 2.0) for n in (5, 10, 20)] == [0.0, 0.0, 0.0]


def test_format_full_and_search_in_several_scripts():
    pattern = r"<think>.+</think>\s*<answer>.+</answer>"
    completions = [
        "<think>二十加一</think>\n<answer>二十一</answer>\n",  # zh, newline inside and trailing
        "<think>عشرون</think><answer>واحد وعشرون</answer>",  # ar
        "<answer>двадцать один</answer>",  # ru, no reasoning
        "Jibu: <think>x</think><answer>21</answer>",  # sw, text before the format
    ]
    assert format_match([""] * 4, completions, pattern=pattern) == [1.0, 1.0, 0.0, 0.0]
    assert format_match([""] * 4, completions, pattern=pattern, mode="search") == [1.0, 1.0, 0.0, 1.0]


def test_format_params_are_checked_at_build_time():
    with pytest.raises(UserError, match="parameter 'pattern' is required"):
        RewardSpec("format")
    with pytest.raises(UserError, match="not a valid regular expression"):
        build_reward_functions([RewardSpec("format", params={"pattern": "(<answer>"})])
    with pytest.raises(UserError, match="mode must be 'full'"):
        build_reward_functions([RewardSpec("format", params={"pattern": "x", "mode": "fullmatch"})])
    with pytest.raises(UserError, match="min_ratio <= max_ratio"):
        build_reward_functions([RewardSpec("length", params={"min_ratio": 2.0, "max_ratio": 1.0})])
