"""The experiments package as a whole: its doctests hold, and it keeps its borders."""

from __future__ import annotations

import ast
import doctest
import importlib
from pathlib import Path

import pytest

MODULES = ("source", "fields", "sections", "training", "data", "diff", "plan", "loader")


@pytest.mark.parametrize("name", [f"mlgrpo.experiments.{m}" for m in MODULES] + ["mlgrpo.commands.validate"])
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0


@pytest.mark.parametrize("name", MODULES)
def test_reading_an_experiment_never_touches_tracking_or_the_runner(name):
    """Only the tracking layer imports mlflow; validating a file must not start a run or a tracking store."""
    path = Path(importlib.import_module(f"mlgrpo.experiments.{name}").__file__)
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    forbidden = ("mlflow", "mlgrpo.tracking", "mlgrpo.experiments.runner", "mlgrpo.experiments.worker")
    assert not [m for m in imported if m.startswith(forbidden)]
