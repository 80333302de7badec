"""mlgrpo.reports.evidence: the verdict of one paired difference, worked by hand, and a property that no
verdict ever says more or less than its interval."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlgrpo.reports.evidence import judge

COMMON = {"pairs": 100, "seeds": 2, "per_prompt": True, "higher_is_better": True, "smallest": 0.02, "min_seeds": 6}


def test_hand_worked_verdicts():
    better = judge(0.06, 0.02, 0.10, 0.01, **COMMON)
    assert better.verdict == "better" and better.conditional  # 2 seeds of 6: these trained models only
    assert judge(-0.06, -0.10, -0.02, 0.01, **COMMON).verdict == "worse"
    # the user's file of the issue: every arm near 0, +0.004 [+0.001, +0.008], p = 0.008: significant, and
    # a fifth of the smallest effect of interest
    tiny = judge(0.004, 0.001, 0.008, 0.008, **COMMON)
    assert tiny.verdict == "negligible" and "smaller than the smallest effect of interest 0.02" in tiny.reason
    within = judge(-0.01, -0.015, 0.012, 0.4, **COMMON)
    assert within.verdict == "negligible" and "within +-0.02" in within.reason
    assert judge(-0.03, -0.08, 0.02, 0.3, **COMMON).verdict == "no difference"
    # the interval excludes 0, Holm's p does not reject: said as unclear, never as "no difference"
    unclear = judge(0.05, 0.01, 0.09, 0.08, **COMMON)
    assert unclear.verdict == "unclear" and "Holm-adjusted p = 0.08" in unclear.reason


def test_the_chrf_case_of_the_issue_is_untestable_with_its_reason():
    # chrF has one value per seed; 2 seeds give 2 pairs, whose sign-flip p cannot go below 2/4 = 0.5, while
    # a bootstrap over them gave ru -3.5 [-4.16, -2.84]: neither "no difference" nor a claim
    found = judge(-3.5, -4.16, -2.84, 0.5, **{**COMMON, "per_prompt": False, "pairs": 2, "smallest": 1.0})
    assert found.verdict == "untestable" and not found.conditional
    assert found.reason == ("one value per seed (no per-prompt scores) and 2 seeds: a test over seeds needs 6 "
                            "(its smallest p here is 2/2^2 = 0.5)")
    # with 6 seeds it is testable over seeds, and a claim about the algorithm
    six = judge(-3.5, -4.16, -2.84, 2 / 64, **{**COMMON, "per_prompt": False, "pairs": 6, "seeds": 6, "smallest": 1.0})
    assert six.verdict == "worse" and not six.conditional


def test_lower_is_better_and_missing_values():
    assert judge(-0.5, -0.7, -0.3, 0.001, **{**COMMON, "higher_is_better": False}).verdict == "better"
    assert judge(0.1, math.nan, math.nan, 0.01, **COMMON).verdict == "untestable"
    assert judge(0.1, 0.05, 0.2, 0.01, **{**COMMON, "pairs": 1}).reason == "fewer than 2 paired values"
    # no smallest effect (0): nothing is negligible, a zero-width interval at 0 is "no difference"
    assert judge(0.0, 0.0, 0.0, 1.0, **{**COMMON, "smallest": 0.0}).verdict == "no difference"


numbers = st.floats(-2, 2, allow_nan=False)


@settings(max_examples=400, deadline=None)
@given(numbers, numbers, numbers, st.floats(0, 1), st.sampled_from([0.0, 0.02, 0.5]), st.booleans())
def test_no_verdict_contradicts_its_interval(d, a, b, p, delta, higher):
    low, high = min(a, b, d), max(a, b, d)  # a percentile interval around its point estimate
    found = judge(d, low, high, p, **{**COMMON, "smallest": delta, "higher_is_better": higher})
    sign = 1 if higher else -1
    if found.verdict in ("better", "worse"):
        assert (low > 0 or high < 0) and p < 0.05 and abs(d) >= delta
        assert (sign * d > 0) == (found.verdict == "better")
    elif found.verdict == "no difference":
        assert low <= 0 <= high
    elif found.verdict == "unclear":
        assert (low > 0 or high < 0) and p >= 0.05
    else:
        assert found.verdict == "negligible" and (abs(d) < delta or -delta < low <= high < delta)


@pytest.mark.parametrize("p, text", [(0.0, "p < 0.0005"), (0.0123, "p = 0.012")])
def test_p_values_are_written_for_people(p, text):
    assert text in judge(0.5, 0.4, 0.6, p, **COMMON).reason
