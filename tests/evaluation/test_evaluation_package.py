"""The evaluation package as a whole: its doctests hold, every metric has one, and it keeps its borders."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

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


def test_import_loads_no_tracker_trainer_or_model_library():
    heavy = ("trl", "mlflow", "transformers", "torch", "mlgrpo.trainers")
    code = f"import sys, mlgrpo.evaluation; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_module_of_the_package_imports_mlflow_or_trainers():
    from pathlib import Path

    import mlgrpo.evaluation

    root = Path(mlgrpo.evaluation.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "import mlflow" not in text and "mlgrpo.trainers" not in text, path
