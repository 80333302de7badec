"""`mlgrpo run` end to end on a trimmed quickstart: the default local store and a real MLflow server."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TRIMMED = Path(__file__).with_name("trimmed.yaml")


def mlgrpo(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mlgrpo.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})


def runs_of(uri: str, experiment: str):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    return client, client.search_runs([exp.experiment_id])


def check_layout(uri: str) -> None:
    client, runs = runs_of(uri, "trimmed-quickstart")
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) >= 1 and sorted(r.data.tags["arm"] for r in children) == ["grpo", "ppo"]
    for run in children:
        assert run.info.status == "FINISHED"
        tags = run.data.tags
        assert tags["algorithm"] == tags["arm"] and tags["seed"] == "0" and tags["languages"] == "en,ja"
        assert len(tags["config_hash"]) == 12 and "mlgrpo.version" in tags
        metrics = run.data.metrics
        for name in ("train/reward/en", "train/reward/ja", "train/reward/macro", "eval/exact_match/en",
                     "eval/chrf/ja", "system/samples_per_sec", "system/peak_memory_mb",
                     "eval/kl_ref/en", "eval/collapse/ja", "eval/change/chrf/macro"):
            assert name in metrics, name
        history = client.get_metric_history(run.info.run_id, "eval/chrf/en")
        assert sorted(m.step for m in history) == [0, 2, 4]  # step 0, every 2 steps, the end: once each
        assert run.data.params["training.learning_rate"] in ("0.001", "1e-3", "0.0010")
        resolved = client.download_artifacts(run.info.run_id, "config.resolved.yaml")  # each run's own config
        config = yaml.safe_load(open(resolved, encoding="utf-8"))
        assert config["arm"] == tags["arm"] and config["seed"] == 0 and config["config_hash"] == tags["config_hash"]
    ppo = next(r for r in children if r.data.tags["arm"] == "ppo")
    assert "train/ppo/value_loss" in ppo.data.metrics or any(k.startswith("train/ppo/value_loss") for k in ppo.data.metrics)


@pytest.mark.slow
def test_run_on_the_default_local_store_then_skip_on_rerun(tmp_path):
    shutil.copy(TRIMMED, tmp_path / "trimmed.yaml")
    first = mlgrpo("run", "trimmed.yaml", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "ppo-seed0: FINISHED" in first.stderr and "grpo-seed0: FINISHED" in first.stderr
    assert (tmp_path / "mlflow.db").exists()  # MLflow's default store, in the working directory
    for arm in ("ppo", "grpo"):
        assert (tmp_path / "runs" / "trimmed-quickstart" / f"{arm}-seed0" / "final" / "model.safetensors").exists()
    # the comparison report, written at the end and logged on the parent run
    assert (tmp_path / "reports" / "trimmed-quickstart" / "report.html").is_file()
    client, runs = runs_of(f"sqlite:///{tmp_path}/mlflow.db", "trimmed-quickstart")
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    logged = [a.path for a in client.list_artifacts(parent.info.run_id, "report")]
    assert "report/report.html" in logged and "report/report.md" in logged
    check_layout(f"sqlite:///{tmp_path}/mlflow.db")
    again = mlgrpo("run", "trimmed.yaml", cwd=tmp_path)
    assert again.returncode == 0 and again.stderr.count("skipped (finished earlier)") == 2
    _, runs = runs_of(f"sqlite:///{tmp_path}/mlflow.db", "trimmed-quickstart")
    assert len([r for r in runs if "mlflow.parentRunId" in r.data.tags]) == 2  # no duplicates


@pytest.mark.slow
def test_run_against_a_real_mlflow_server(tmp_path, mlflow_server):
    shutil.copy(TRIMMED, tmp_path / "trimmed.yaml")
    result = mlgrpo("run", "trimmed.yaml", "--tracking-uri", mlflow_server.uri, "--only", "grpo", "--only", "ppo",
                    cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "mlflow.db").exists()
    check_layout(mlflow_server.uri)


def test_dry_run_trains_nothing(tmp_path):
    shutil.copy(TRIMMED, tmp_path / "trimmed.yaml")
    result = mlgrpo("run", "trimmed.yaml", "--dry-run", "--seeds", "0", cwd=tmp_path)
    assert result.returncode == 0 and "ppo-seed0" in result.stderr and "dry run" in result.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "mlflow.db").exists()


def test_unreachable_server_fails_fast_with_one_line(tmp_path):
    shutil.copy(TRIMMED, tmp_path / "trimmed.yaml")
    result = mlgrpo("run", "trimmed.yaml", "--tracking-uri", "http://127.0.0.1:9", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "127.0.0.1:9" in result.stderr


@pytest.mark.slow
def test_run_under_torchrun_trains_each_run_once_on_two_ranks(tmp_path):
    """Two gloo ranks on CPU: every run is trained by both ranks together, tracked once by rank 0."""
    import os

    shutil.copy(TRIMMED, tmp_path / "trimmed.yaml")
    torchrun = Path(sys.executable).with_name("torchrun")
    result = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", "--no-python", sys.executable,
                             "-m", "mlgrpo.cli", "run", "trimmed.yaml"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    for run in ("ppo-seed0", "grpo-seed0"):
        assert result.stderr.count(f"{run}: FINISHED") == 1  # one progress board, on the main rank
        state = tmp_path / "runs" / "trimmed-quickstart" / run / "final" / "model.safetensors"
        assert state.exists()
    check_layout(f"sqlite:///{tmp_path}/mlflow.db")  # one parent, one child per run, each step logged once
    client, runs = runs_of(f"sqlite:///{tmp_path}/mlflow.db", "trimmed-quickstart")
    for run in runs:
        if "mlflow.parentRunId" in run.data.tags:
            # rewards come with each rollout (update.minibatches 2: steps 1 and 3); the loss with every step
            steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/reward/en")]
            assert steps == [1, 3], (run.info.run_name, steps)
            steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
            assert steps == [1, 2, 3, 4], (run.info.run_name, steps)


@pytest.mark.slow
def test_quickstart_with_four_workers_on_one_sqlite_store(quickstart_store, reliability):
    """The quickstart's six runs (3 arms x 2 seeds, six languages, evaluation, checkpoints, the report) in 4
    worker processes writing to one new SQLite store, logging every step: no "database is locked", every
    run FINISHED once, every metric step logged once. Shortened (a very small tiny model, 8 steps; the
    session's quickstart_store, tests/conftest.py) so that CI can afford it; the full-length quickstart with
    --workers 4 is recorded in reports/reliability.md."""
    tmp_path, result = quickstart_store.folder, quickstart_store.result
    assert result.returncode == 0, result.stderr[-3000:]
    logs = [result.stdout, result.stderr] + [p.read_text(encoding="utf-8", errors="replace")
                                            for p in tmp_path.glob("runs/quickstart/*/worker.log")]
    assert len(logs) == 2 + 6 and not [text for text in logs if "locked" in text.lower()]
    assert "6 run(s) to train in 4 worker process(es)" in result.stderr, result.stderr[-2000:]
    client, runs = runs_of(f"sqlite:///{tmp_path}/mlflow.db", "quickstart")
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert sorted(r.info.run_name for r in children) == sorted(
        f"{arm}-seed{seed}" for arm in ("ppo", "grpo", "grpo-lang-balanced") for seed in (0, 1))
    for run in children:
        assert run.info.status == "FINISHED", run.info.run_name
        # one rollout per 4 optimiser steps (update.minibatches 4): rewards at steps 1 and 5, the loss at each
        train = [m.step for m in client.get_metric_history(run.info.run_id, "train/reward/macro")]
        assert sorted(train) == [1, 5], (run.info.run_name, train)
        train = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
        assert sorted(train) == list(range(1, 9)), (run.info.run_name, train)
        evals = [m.step for m in client.get_metric_history(run.info.run_id, "eval/exact_match/sw")]
        assert sorted(evals) == [0, 4, 8], (run.info.run_name, evals)
    # Four at once: each run spans its first logged loss to its end, and at some moment four of them overlap
    # (a runner that merged the CPU workers' empty device groups ran them one at a time).
    spans = [(min(m.timestamp for m in client.get_metric_history(r.info.run_id, "train/loss")), r.info.end_time)
             for r in children]
    assert max(sum(start <= t < end for start, end in spans) for t, _ in spans) == 4, spans
    assert (tmp_path / "reports" / "quickstart" / "report.html").is_file()
    reliability.record("fault", "the quickstart's 6 runs in 4 worker processes on one new sqlite store, logging "
                       "every step", "survived")


def test_runner_doctests():
    import doctest

    import mlgrpo.experiments.runner as runner

    result = doctest.testmod(runner)
    assert result.failed == 0 and result.attempted >= 1
