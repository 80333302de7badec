"""Evaluation that sees what RL changes (issue 26): sampled pass@1 at the training temperature beside greedy, and
each arm's change since step 0 with a paired 95% interval over prompts, in MLflow and in the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TRIMMED = Path(__file__).with_name("trimmed.yaml")


@pytest.mark.slow
def test_a_run_logs_sampled_pass_at_1_and_its_paired_change_since_step_0(tmp_path):
    from mlflow.tracking import MlflowClient

    config = yaml.safe_load(TRIMMED.read_text(encoding="utf-8"))
    config["training"].update(max_steps=2, temperature=0.7)
    config["evaluation"].update(every_steps=0, sampled_k=2)
    config["arms"] = {"grpo": {}}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "exp.yaml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    start = json.loads((tmp_path / "runs" / "trimmed-quickstart" / "grpo-seed0" / "eval_start.json").read_text())
    assert start["settings"]["temperature"] == 0.7  # the rollouts' temperature, not a default
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    experiment = client.get_experiment_by_name("trimmed-quickstart")
    (child,) = [r for r in client.search_runs([experiment.experiment_id]) if "mlflow.parentRunId" in r.data.tags]
    metrics = child.data.metrics
    assert "eval/pass_at_1/en" in metrics and "eval/exact_match/en" in metrics  # sampled beside greedy
    for metric in ("pass_at_1", "exact_match"):
        low, mean, high = (metrics[f"eval/change/{metric}/prompts_{s}"] for s in ("low", "mean", "high"))
        assert low <= mean <= high and metrics[f"eval/change/{metric}/prompts_n"] == 8  # 4 prompts x 2 languages
    report = (tmp_path / "reports" / "trimmed-quickstart" / "report.md").read_text(encoding="utf-8")
    table = report.split("**Change since step 0, per arm**")[1].split("\n\n")[1]
    assert "| grpo | pass\\_at\\_1 |" in table and "language\\_consistency" not in table  # no per-prompt values: no row
