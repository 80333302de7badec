"""`mlgrpo validate`: the plan as tables or JSON, and errors as one line with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mlgrpo import cli

from .conftest import EXPERIMENTS, edited


@pytest.fixture
def main(monkeypatch):
    """cli.main with the validate sub-command registered (until cli.COMMAND_MODULES lists it)."""
    if "validate" not in cli.COMMAND_MODULES:
        monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "validate"))
    return cli.main


def test_prints_runs_differences_data_and_ok(main, capsys):
    assert main(["validate", str(EXPERIMENTS / "quickstart.yaml")]) == 0
    out = capsys.readouterr().out
    assert "runs (3 arms x 2 seeds = 6):" in out
    assert "grpo-lang-balanced-seed1" in out
    header = next(line for line in out.splitlines() if line.strip().startswith("key "))
    assert header.split() == ["key", "ppo", "grpo", "grpo-lang-balanced"]
    row = next(line for line in out.splitlines() if line.strip().startswith("sampler.name"))
    assert row.split() == ["sampler.name", "uniform", "uniform", "balanced"]
    assert "  sw        40     50" in out and "  en        400    50" in out
    assert out.rstrip().endswith("OK")


def test_json(main, capsys):
    assert main(["validate", str(EXPERIMENTS / "imbalance.yaml"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and len(report["runs"]) == 15
    assert report["data"]["sw"] == {"train": 20, "eval": 50}
    keys = [row["key"] for row in report["differences"]]
    assert keys == ["algorithm.name", "algorithm.advantage.estimator", "algorithm.advantage.std_scope", "critic",
                    "sampler.name", "sampler.oversample"]
    assert report["schedule"]["grpo"]["steps_per_rollout"] == 4 and report["warnings"] == []


def test_error_is_one_line_and_exit_2(main, capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(edited("  learning_rate: 2.0e-4", "  lerning_rate: 2.0e-4"), encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"mlgrpo validate: error: {path}:")
    assert "did you mean 'learning_rate'?" in err


def test_importing_experiments_loads_no_heavy_library():
    code = ("import sys, mlgrpo.experiments, mlgrpo.commands.validate; "
            "print(sorted(m for m in ('torch', 'trl', 'peft', 'mlflow', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == "[]"
