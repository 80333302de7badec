"""The warm start's stopping rule, on hand-made exact-match numbers, and the callback that applies it."""

from __future__ import annotations

import dataclasses

import pytest
from transformers import TrainerControl, TrainerState, TrainingArguments

from mlgrpo.models.settings import TinySettings
from mlgrpo.models.warmstart import CAP, THRESHOLD, ExactMatchStop, completion_for, is_check_step, stop_reason


@pytest.mark.parametrize(
    ("step", "exact_match", "expected"),
    [
        (10, 0.00, None),  # far below the target, far from the cap
        (30, 0.29, None),  # just below
        (30, 0.30, THRESHOLD),  # reaching the target counts
        (30, 0.45, THRESHOLD),
        (40, 0.10, CAP),  # the cap, below the target
        (40, 0.30, THRESHOLD),  # at the cap and at the target: the target is what happened
    ],
)
def test_stop_reason(step, exact_match, expected):
    assert stop_reason(step, exact_match, target=0.3, max_steps=40) == expected


def test_check_steps_are_every_k_and_the_cap():
    assert [s for s in range(1, 26) if is_check_step(s, check_every=10, max_steps=25)] == [10, 20, 25]


def _run(exact_matches_by_check: list[dict[str, float]], settings: TinySettings) -> tuple[ExactMatchStop, int]:
    """Feed the callback step ends like the Trainer does; measurements come from the given list."""
    measured = iter(exact_matches_by_check)
    stopper = ExactMatchStop(measure=lambda model: next(measured), settings=settings)
    args, state, control = TrainingArguments(output_dir="unused", report_to="none"), TrainerState(), TrainerControl()
    stopper.on_train_begin(args, state, control)
    for step in range(1, settings.max_steps + 1):
        state.global_step = step
        stopper.on_step_end(args, state, control, model=None)
        if control.should_training_stop:
            return stopper, step
    return stopper, settings.max_steps


SETTINGS = TinySettings(check_every=10, max_steps=50, target_exact_match=0.3)


def test_callback_stops_at_the_first_check_whose_macro_mean_reaches_the_target():
    checks = [
        {"en": 0.0, "ja": 0.0},  # step 10: mean 0
        {"en": 0.4, "ja": 0.1},  # step 20: mean (0.4 + 0.1) / 2 = 0.25 < 0.3
        {"en": 0.5, "ja": 0.2},  # step 30: mean 0.35 >= 0.3 -> stop
        {"en": 0.9, "ja": 0.9},  # never measured
    ]
    stopper, step = _run(checks, SETTINGS)
    assert step == 30 and stopper.reason == THRESHOLD
    assert [c.step for c in stopper.history] == [10, 20, 30]
    assert [c.exact_match for c in stopper.history] == pytest.approx([0.0, 0.25, 0.35])
    assert stopper.history[-1].by_language == {"en": 0.5, "ja": 0.2}


def test_callback_stops_at_the_cap_when_the_target_is_never_reached():
    stopper, step = _run([{"en": 0.1}] * 5, SETTINGS)
    assert step == 50 and stopper.reason == CAP and len(stopper.history) == 5


def test_target_zero_stops_at_the_first_check():
    stopper, step = _run([{"en": 0.0}], dataclasses.replace(SETTINGS, target_exact_match=0.0))
    assert step == 10 and stopper.reason == THRESHOLD


def test_completion_starts_with_one_space_unless_the_prompt_ends_in_one():
    assert completion_for("<en> number: 5 ->", "five") == " five"
    assert completion_for("Write 5 in words:\n", "five") == "five"
