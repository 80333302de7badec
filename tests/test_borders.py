"""The packages' borders, as two tables: what importing (or using) a package may load, and what its files may import.

Data flows one way (README's layout): reading data, models, rewards, algorithms and evaluation never load a
tracker or a trainer, and the cheap ones no ML library; experiment files are read without tracking or the
runner. Each row of IMPORTS runs in a fresh interpreter, so that it sees only what its own import loads.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mlgrpo

ROOT = Path(mlgrpo.__file__).parent
ML = ("torch", "transformers", "trl", "datasets", "accelerate", "mlflow")

# (what a fresh interpreter runs, the modules it must not have loaded afterwards)
IMPORTS = {
    "models": ("import mlgrpo.models, mlgrpo.commands.model, mlgrpo.models.info", ML),
    "data commands": ("import mlgrpo.data.prepare, mlgrpo.data.inspect, mlgrpo.commands.data", ML + ("pyarrow",)),
    # `datasets` and `pyarrow` load only for sources that need them (Parquet, datasets folders, hub ids)
    "reading a jsonl file": ("import pathlib, tempfile; from mlgrpo.data.readers import read_records; "
                             "p = pathlib.Path(tempfile.mkdtemp()) / 'a.jsonl'; "
                             "p.write_text('{\"prompt\": \"Grüß Gott\"}\\n', encoding='utf-8'); "
                             "assert read_records(str(p))", ML + ("pyarrow",)),
    "rewards": ("import mlgrpo.rewards", ("trl", "mlflow", "transformers", "torch", "mlgrpo.trainers")),
    "algorithms": ("import mlgrpo.algorithms", ("mlflow", "transformers", "trl", "datasets", "accelerate",
                                                "mlgrpo.trainers", "mlgrpo.tracking")),
    "evaluation": ("import mlgrpo.evaluation", ("trl", "mlflow", "transformers", "torch", "mlgrpo.trainers")),
}

# (files, the import prefixes none of them may name, files exempt); imports inside functions count too
STATIC = {
    "models": ("models/*.py", ("mlflow", "mlgrpo.rewards", "mlgrpo.algorithms", "mlgrpo.trainers", "mlgrpo.tracking",
                               "mlgrpo.rollout"), ()),
    "models use TRL only in the warm start": ("models/*.py", ("trl",), ("warmstart.py",)),
    "evaluation": ("evaluation/**/*.py", ("mlflow", "mlgrpo.trainers"), ()),
    "reading an experiment": ("experiments/{source,fields,sections,training,data,diff,plan,loader}.py",
                              ("mlflow", "mlgrpo.tracking", "mlgrpo.experiments.runner", "mlgrpo.experiments.worker"),
                              ()),
    "algorithms": ("algorithms/*.py", ("mlflow", "mlgrpo.trainers", "mlgrpo.tracking", "mlgrpo.experiments"), ()),
}


@pytest.mark.parametrize("name", IMPORTS)
def test_importing_loads_nothing_beyond_its_border(name):
    code, forbidden = IMPORTS[name]
    script = f"import sys\n{code}\nprint(' '.join(m for m in {forbidden!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "", f"{name} loaded {result.stdout.strip()}"


def imported_names(path: Path) -> set[str]:
    """Every module an `import` statement in the file names, including imports inside functions."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def files(pattern: str) -> list[Path]:
    if "{" in pattern:
        head, rest = pattern.split("{")
        names, tail = rest.split("}")
        return [ROOT / f"{head}{name}{tail}" for name in names.split(",")]
    return sorted(ROOT.glob(pattern))


@pytest.mark.parametrize("name", STATIC)
def test_no_file_imports_a_later_stage(name):
    pattern, forbidden, exempt = STATIC[name]
    paths = [path for path in files(pattern) if path.name not in exempt]
    assert len(paths) >= 3 and all(path.is_file() for path in paths), pattern
    offending = sorted(f"{path.relative_to(ROOT)}: {module}" for path in paths for module in imported_names(path)
                       if module.startswith(forbidden))
    assert offending == []
