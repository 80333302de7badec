"""mlgrpo.models keeps its borders: cheap to import, and blind to rewards, algorithms, trainers and MLflow."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mlgrpo.models

FORBIDDEN = ("mlflow", "mlgrpo.rewards", "mlgrpo.algorithms", "mlgrpo.trainers", "mlgrpo.tracking", "mlgrpo.rollout")


def test_package_and_command_import_no_ml_library():
    script = "import sys, mlgrpo.models, mlgrpo.commands.model, mlgrpo.models.info; print('\\n'.join(sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(result.stdout.split())
    assert not loaded & {"torch", "transformers", "trl", "datasets", "mlflow"}


def _imported_names(path: Path) -> set[str]:
    """Every module an `import` statement in the file names, including imports inside functions."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_module_imports_a_later_stage():
    files = sorted(Path(mlgrpo.models.__file__).parent.glob("*.py"))
    assert len(files) >= 9
    offending = {
        f"{path.name}: {name}"
        for path in files
        for name in _imported_names(path)
        if name == "trl" and path.name != "warmstart.py" or name.startswith(FORBIDDEN)
    }
    assert offending == set()  # TRL is used only by the warm start
