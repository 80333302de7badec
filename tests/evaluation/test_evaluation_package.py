"""The evaluation package as a whole: its doctests hold, every metric has one, and it keeps its borders."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["compute", "diversity", "generation", "hf", "inputs", "language", "overlap", "policy", "registry",
           "report", "safety", "sources", "tokenization"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(f"mlgrpo.evaluation.{name}")
    result = doctest.testmod(module)
    assert result.failed == 0


def test_every_registered_metric_has_a_hand_worked_doctest():
    from mlgrpo.evaluation import METRICS

    for name, metric in METRICS.items():
        assert ">>> " in (metric.func.__doc__ or ""), name
