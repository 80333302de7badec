"""Reports sit at the end of the data flow: they read MLflow through mlgrpo.tracking and know nothing of
models, trainers, rewards or advantage math; their statistics load without torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mlgrpo

REPORTS = Path(mlgrpo.__file__).parent / "reports"
UPSTREAM = ("mlgrpo.models", "mlgrpo.trainers", "mlgrpo.rewards", "mlgrpo.algorithms", "mlgrpo.sampling",
            "mlgrpo.langid", "mlgrpo.data", "mlgrpo.commands", "torch", "transformers", "trl", "mlflow")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_reports_know_nothing_upstream():
    offenders = {p.name: sorted(n for n in _imports(p) if n.startswith(UPSTREAM)) for p in REPORTS.glob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_statistics_load_without_torch_or_mlflow():
    code = ("import sys, mlgrpo.reports.stats, mlgrpo.reports.aggregate, mlgrpo.reports.analysis; "
            "print(' '.join(m for m in ('mlflow', 'torch', 'transformers') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
