"""The store every node of a cluster writes to: a real `mlflow server` on a real PostgreSQL, artifacts served
through it (--serve-artifacts), so that nodes share no folder. Four writers at once, every point present once;
a run's report and saved views read back from the server. Skips, naming the install command, without PostgreSQL."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

from mlgrpo.tracking.server import MlflowServer

from .conftest import WRITER
from .postgres import Postgres, require

WORKERS, STEPS, KEYS_PER_STEP = 4, 10, 20  # writer.py: 4 metrics x 5 languages a step
TRIMMED = Path(__file__).resolve().parents[1] / "experiments" / "trimmed.yaml"


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory):
    require()
    database = Postgres().start()
    folder = tmp_path_factory.mktemp("pg-mlflow")
    server = MlflowServer(database.url, artifacts_destination=folder / "artifacts", log_path=folder / "server.log")
    try:
        server.start()
        server.wait_ready(timeout_s=180)
        yield server, database, folder
    finally:
        server.stop()
        database.stop()


@pytest.mark.slow
def test_four_writers_at_once_every_point_once_artifacts_through_the_server(pg_server, tmp_path, reliability):
    server, database, folder = pg_server
    uri = server.url
    workers = [subprocess.Popen([sys.executable, str(WRITER), uri, "pg-shared", str(tmp_path / "outbox"), f"w{i}",
                                 str(STEPS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for i in range(WORKERS)]
    outputs = [worker.communicate(timeout=300) for worker in workers]
    for worker, (_, err) in zip(workers, outputs):
        assert worker.returncode == 0, err[-2000:]
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("pg-shared")
    assert experiment.artifact_location.startswith("mlflow-artifacts:")  # served, not a path on this machine
    children = client.search_runs([experiment.experiment_id], "tags.`mlgrpo.role` = 'child'")
    assert sorted(run.info.run_name for run in children) == [f"w{i}" for i in range(WORKERS)]
    for run in children:
        assert run.info.status == "FINISHED" and len(run.data.metrics) == KEYS_PER_STEP
        for key in run.data.metrics:
            assert [m.step for m in client.get_metric_history(run.info.run_id, key)] == list(range(STEPS))
        note = client.download_artifacts(run.info.run_id, f"notes/{run.info.run_name}.txt", str(tmp_path))
        assert Path(note).read_text(encoding="utf-8") == f"written by {run.info.run_name}\n"
    # the artifacts sit in the server's destination; the database holds the runs
    assert len(list((folder / "artifacts").rglob("notes/w*.txt"))) == WORKERS
    log = (folder / "server.log").read_text(encoding="utf-8", errors="replace")
    assert database.password not in log  # the backend's password is not logged
    reliability.record("fault", "4 writers at once on mlflow server + PostgreSQL, artifacts served", "survived")


@pytest.mark.slow
def test_a_run_report_and_saved_views_read_back_from_the_server(pg_server, tmp_path):
    server, _, _ = pg_server
    shutil.copy(TRIMMED, tmp_path / "trimmed.yaml")
    result = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "trimmed.yaml", "--only", "grpo",
                             "--tracking-uri", server.url], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    client = MlflowClient(server.url)
    experiment = client.get_experiment_by_name("trimmed-quickstart")
    runs = client.search_runs([experiment.experiment_id])
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    child = next(r for r in runs if "mlflow.parentRunId" in r.data.tags)
    assert [m.step for m in client.get_metric_history(child.info.run_id, "train/loss")] == [1, 2, 3, 4]
    report = Path(client.download_artifacts(parent.info.run_id, "report/report.md", str(tmp_path / "back")))
    assert "grpo" in report.read_text(encoding="utf-8")
    views = {k: v for k, v in experiment.tags.items() if k.startswith("mlflow.sharedViewState.")}
    assert views, "no saved view on the server's experiment"
    from mlgrpo.tracking.views import read_envelope

    names = [read_envelope(value)[0] for value in views.values()]
    assert "Reward by language" in names
