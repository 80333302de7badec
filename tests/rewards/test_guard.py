"""RewardGuard: every bad kind, in both modes; None is passed on; counts, metrics, warnings."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from mlgrpo.rewards.guard import BadRewardError, RewardGuard

COMPLETIONS = ["二十一", "ishirini na moja", "двадцать один"]


def returning(values):
    def reward(prompts, completions, **_):
        return values

    return reward


def raising(prompts, completions, **_):
    raise ZeroDivisionError("division by zero")


# (function, kind, output with on_bad_reward="zero", index of the completion a message quotes:
# the offending one, or the first of the batch when the whole batch is bad)
CASES = [
    (returning([1.0, math.nan, 0.5]), "nan", [1.0, 0.0, 0.5], 1),
    (returning([1.0, 0.5, -math.inf]), "inf", [1.0, 0.5, 0.0], 2),
    (returning([1.0, "0.5", 0.0]), "type", [1.0, 0.0, 0.0], 1),
    (returning([1.0, 0.5]), "length", [0.0, 0.0, 0.0], 0),
    (returning("1.0"), "type", [0.0, 0.0, 0.0], 0),
    (raising, "error", [0.0, 0.0, 0.0], 0),
]


@pytest.mark.parametrize("func, kind, expected, _", CASES)
def test_zero_mode_scores_bad_rewards_zero_counts_and_warns(func, kind, expected, _, caplog):
    guard = RewardGuard("zero")
    wrapped = guard.wrap(func, "exact_match")
    with caplog.at_level(logging.WARNING, logger="mlgrpo.rewards.guard"):
        assert wrapped(prompts=[""] * 3, completions=COMPLETIONS, language=["zh", "sw", "ru"]) == expected
    assert guard.counts()["exact_match"][kind] == 1
    assert len(caplog.records) == 1
    assert "'exact_match'" in caplog.text and kind in caplog.text


@pytest.mark.parametrize("func, kind, _, quoted", CASES)
def test_fail_mode_names_function_kind_and_completion(func, kind, _, quoted):
    wrapped = RewardGuard("fail").wrap(func, "chrf")
    with pytest.raises(BadRewardError) as info:
        wrapped(prompts=[""] * 3, completions=COMPLETIONS)
    message = str(info.value)
    assert "'chrf'" in message and f": {kind}:" in message and "on_bad_reward='fail'" in message
    assert repr(COMPLETIONS[quoted]) in message


def test_the_original_exception_is_chained_not_swallowed():
    with pytest.raises(BadRewardError) as info:
        RewardGuard("fail").wrap(raising, "rm")(prompts=[""], completions=["x"])
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "ZeroDivisionError: division by zero" in str(info.value)


def test_none_is_not_applicable_not_bad():
    for mode in ("zero", "fail"):
        guard = RewardGuard(mode)
        out = guard.wrap(returning([None, 1.0, None]), "chrf")(prompts=[""] * 3, completions=COMPLETIONS)
        assert out == [None, 1.0, None]
        assert guard.counts() == {"chrf": {"values": 3, "none": 2}}


def test_numpy_values_and_arrays_are_numbers():
    out = RewardGuard("fail").wrap(returning(np.array([0.25, 1.0, 0.0], dtype=np.float32)), "rm")(
        prompts=[""] * 3, completions=COMPLETIONS)
    assert out == [0.25, 1.0, 0.0] and all(type(v) is float for v in out)


def test_long_completions_are_cut_in_messages():
    long = "ا" * 500
    with pytest.raises(BadRewardError) as info:
        RewardGuard("fail").wrap(returning([math.nan]), "rm")(prompts=[""], completions=[long])
    assert "ا" * 80 + "…" in str(info.value) and "ا" * 81 not in str(info.value)


def test_counts_metrics_reset_and_throttled_warnings(caplog):
    guard = RewardGuard("zero")
    nan_reward = guard.wrap(returning([math.nan, 1.0]), "rm")
    ok_reward = guard.wrap(returning([1.0, None]), "exact_match")
    with caplog.at_level(logging.WARNING, logger="mlgrpo.rewards.guard"):
        for _ in range(12):
            nan_reward(prompts=["", ""], completions=["a", "b"])
            ok_reward(prompts=["", ""], completions=["a", "b"])
    # One NaN per call: warned on the 1st and the 10th, counted every time.
    assert len(caplog.records) == 2 and "10 so far" in caplog.records[1].getMessage()
    assert guard.counts() == {"rm": {"values": 24, "nan": 12}, "exact_match": {"values": 24, "none": 12}}
    assert guard.metrics() == {"reward_guard/rm/nan": 12, "reward_guard/rm/values": 24,
                               "reward_guard/exact_match/none": 12, "reward_guard/exact_match/values": 24}
    guard.reset()
    assert guard.counts() == {}


def test_bad_mode_is_a_user_error():
    with pytest.raises(Exception, match="on_bad_reward must be one of zero, fail"):
        RewardGuard("skip")
