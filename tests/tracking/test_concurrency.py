"""Four worker processes writing to one new local SQLite store at once: none fails, nothing is lost.

Plain MlflowClient processes opening a new SQLite store together fail in MLflow's table migrations
("Online migration expected to match one row"); the tracker serialises the first opening with a lock
file and retries "database is locked" with backoff.
"""

from __future__ import annotations

import pytest

import subprocess
import sys

from mlflow import MlflowClient

from .conftest import WRITER

WORKERS = 4
STEPS = 10
KEYS_PER_STEP = 20  # 4 metrics x 5 languages, see writer.py


@pytest.mark.slow
def test_four_writers_on_one_new_sqlite_store(tmp_path, reliability):
    uri = f"sqlite:///{tmp_path}/shared.db"
    workers = [
        subprocess.Popen([sys.executable, str(WRITER), uri, "shared", str(tmp_path / "outbox"), f"w{i}", str(STEPS)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(WORKERS)
    ]
    outputs = [worker.communicate(timeout=240) for worker in workers]
    for worker, (out, err) in zip(workers, outputs):
        assert worker.returncode == 0, err[-2000:]
        assert "locked" not in err
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("shared")
    children = client.search_runs([experiment.experiment_id], "tags.`mlgrpo.role` = 'child'")
    assert sorted(run.info.run_name for run in children) == [f"w{i}" for i in range(WORKERS)]
    for run in children:
        assert run.info.status == "FINISHED" and run.data.tags["written_by"] == run.info.run_name
        assert len(run.data.metrics) == KEYS_PER_STEP
        for key in run.data.metrics:
            assert [m.step for m in client.get_metric_history(run.info.run_id, key)] == list(range(STEPS))
        assert [a.path for a in client.list_artifacts(run.info.run_id, "notes")] == [f"notes/{run.info.run_name}.txt"]
    reliability.record("fault", "4 worker processes writing to one new sqlite store at once", "survived")
