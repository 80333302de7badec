"""numeric_answer: the final number of a completion in every script's digits and separators, by hand."""

from __future__ import annotations

import pytest

from mlgrpo.errors import UserError
from mlgrpo.rewards import RewardSpec, build_reward_functions
from mlgrpo.rewards.numeric import final_number, numeric_answer


@pytest.mark.parametrize("text, number", [
    ("The answer is 42.", 42.0),
    ("Jibu ni ٤٢", 42.0),  # Arabic-Indic digits
    ("پاسخ ۴۲ است", 42.0),  # Persian digits
    ("उत्तर ४२ है", 42.0),  # Devanagari
    ("উত্তর ৪২", 42.0),  # Bengali
    ("คำตอบคือ ๔๒", 42.0),  # Thai
    ("答案是４２。", 42.0),  # full-width
    ("Insgesamt 1.234 Euro", 1234.0),  # German thousands point
    ("Total: 1,234,567", 1234567.0),
    ("Итого 12 345 рублей", 12345.0),  # space grouping
    ("المجموع ١٢٬٣٤٥٫٥", 12345.5),  # Arabic thousands and decimal separators
    ("Es sind 3,5 Liter", 3.5),  # decimal comma
    ("It is 0.75 of it", 0.75),
    ("1.234.567,89 €", 1234567.89),
    ("Temperature −5 degrees", -5.0),  # U+2212 minus
    ("He paid $1,200.50", 1200.5),
    ("5 + 3 = 8\n#### 8", 8.0),  # GSM8K's marker
    ("first 3, then \\boxed{17} and 99", 17.0),  # the box wins over the last number
    ("\\boxed{\\frac{1}{2}} ... 4", 2.0),  # the box's last number
    ("no number here", None),
])
def test_final_number(text, number):
    assert final_number(text) == number


def test_reward_by_hand():
    # 1.234 in a German row is 1234; 3,5 is three and a half, not 35; a missing number is wrong; a row
    # without a numeric reference is not scored.
    got = numeric_answer([""] * 5, ["#### 1.234", "3,5", "nothing", "#### 18", "7"],
                         reference=["1234", "35", "4", 18, "n/a"])
    assert got == [1.0, 0.0, 0.0, 1.0, None]
    assert numeric_answer([""], ["0.3333333"], reference=["0.33333333"], tolerance=1e-6) == [1.0]
    assert numeric_answer([""], ["0.33"], reference=["0.3333"], tolerance=1e-6) == [0.0]


def test_registered_and_checked():
    funcs, _ = build_reward_functions([RewardSpec("numeric_answer")])
    assert funcs[0](prompts=["?"], completions=["#### ٤٢"], reference=["42"]) == [1.0]
    with pytest.raises(UserError, match="tolerance must be a number"):
        build_reward_functions([RewardSpec("numeric_answer", params={"tolerance": 2})])
