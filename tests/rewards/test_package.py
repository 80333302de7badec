"""The rewards package as a whole: its doctests hold, and it keeps its borders."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["answers", "build", "config", "guard", "language", "model", "registry", "shape", "texts", "transform"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(f"mlgrpo.rewards.{name}")
    result = doctest.testmod(module)
    assert result.failed == 0


def test_normalize_answer_doctests():
    import mlgrpo.text

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    for test in finder.find(mlgrpo.text.normalize_answer, "normalize_answer", globs=vars(mlgrpo.text)):
        runner.run(test)
    assert runner.failures == 0 and runner.tries >= 4


def test_every_registered_reward_has_a_doctest():
    from mlgrpo.rewards import REWARDS

    for name, entry in REWARDS.items():
        if name == "reward_model":  # a model, not a rule: tests/rewards/test_model.py checks it instead
            continue
        assert ">>> " in (entry.func.__doc__ or ""), name
