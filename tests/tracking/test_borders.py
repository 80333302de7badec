"""Only mlgrpo.tracking imports mlflow; tracking knows nothing of models, trainers, rewards or algorithms;
and the cheap parts of tracking (names, URIs, params) load without mlflow."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mlgrpo

PACKAGE = Path(mlgrpo.__file__).parent
UPSTREAM = ("mlgrpo.models", "mlgrpo.trainers", "mlgrpo.rewards", "mlgrpo.algorithms", "mlgrpo.sampling",
            "mlgrpo.langid", "mlgrpo.data", "mlgrpo.commands")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            names.update(arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str))
    return names


def test_only_tracking_imports_mlflow():
    offenders = sorted(
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if "tracking" not in path.relative_to(PACKAGE).parts
        and any(name == "mlflow" or name.startswith("mlflow.") for name in _imports(path))
    )
    assert offenders == [], f"only mlgrpo/tracking may import mlflow: {offenders}"


def test_tracking_knows_nothing_upstream():
    offenders = {
        path.name: sorted(n for n in _imports(path) if n.startswith(UPSTREAM))
        for path in (PACKAGE / "tracking").glob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_light_parts_load_without_mlflow():
    code = (
        "import sys, mlgrpo.tracking, mlgrpo.commands.ui, mlgrpo.cli; "
        "from mlgrpo.tracking import metric_name, mask_uri, resolve_tracking_uri, tracked_metrics, FlushPolicy; "
        "print(' '.join(m for m in ('mlflow', 'transformers', 'torch', 'matplotlib', 'pandas') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
