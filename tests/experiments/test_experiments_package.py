"""The experiments package as a whole: its doctests hold, and it keeps its borders."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ("source", "fields", "sections", "training", "data", "diff", "plan", "loader")


@pytest.mark.parametrize("name", [f"mlgrpo.experiments.{m}" for m in MODULES] + ["mlgrpo.commands.validate"])
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
