"""Running the same experiment again: finished children are skipped, interrupted ones reopened (also
after SIGKILL), never duplicated, and no metric step is logged twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from mlflow import MlflowClient

from mlgrpo.errors import UserError
from mlgrpo.tracking import Tracker

from .conftest import QUICK, WRITER

IDENTITY = {"arm": "grpo", "seed": "0", "config_hash": "ab12"}


@pytest.fixture
def tracker(sqlite_uri, experiment_name, tmp_path):
    return Tracker.open(sqlite_uri, experiment_name, policy=QUICK, outbox_dir=tmp_path / "outbox")


def _runs(tracker: Tracker, role: str = "child") -> list:
    return MlflowClient(tracker.uri).search_runs([tracker.experiment_id], f"tags.`mlgrpo.role` = '{role}'")


def _steps(tracker: Tracker, run_id: str, key: str) -> list[int]:
    return [m.step for m in MlflowClient(tracker.uri).get_metric_history(run_id, key)]


def test_finished_child_is_skipped_not_duplicated(tracker):
    first = tracker.start_parent("run 1")
    with tracker.child_run(first, IDENTITY, "grpo-s0")[0] as child:
        child.log_metrics({"train/reward/en": 0.5}, 1)
    second = tracker.start_parent("run 2")
    again, state = tracker.child_run(second, dict(reversed(IDENTITY.items())), "grpo-s0")  # key order is irrelevant
    assert state == "finished" and again.run_id == child.run_id
    other, state = tracker.child_run(second, {**IDENTITY, "seed": "1"}, "grpo-s1")
    assert state == "new" and other.run_id != child.run_id
    assert len(_runs(tracker)) == 2 and len(_runs(tracker, "parent")) == 2


@pytest.mark.parametrize("interrupt, status", [(KeyboardInterrupt, "KILLED"), (RuntimeError, "FAILED")])
def test_interrupted_child_is_marked_and_resumed(tracker, interrupt, status):
    parent = tracker.start_parent("run 1")
    child, _ = tracker.child_run(parent, IDENTITY, "grpo-s0")
    with pytest.raises(interrupt), child:
        child.log_metrics({"train/reward/en": 0.1, "train/loss": 2.0}, 0)
        child.log_metrics({"train/reward/en": 0.2, "train/loss": 1.9}, 1)
        raise interrupt("stop")
    assert child.status() == status
    parent2 = tracker.start_parent("run 2")
    resumed, state = tracker.child_run(parent2, IDENTITY, "grpo-s0")
    assert state == "resume" and resumed.run_id == child.run_id and resumed.status() == "RUNNING"
    assert resumed.last_step() == 1
    tags = MlflowClient(tracker.uri).get_run(resumed.run_id).data.tags
    assert tags["mlgrpo.resumes"] == "1" and tags["mlgrpo.last_parent"] == parent2.run_id
    assert tags["mlflow.parentRunId"] == parent.run_id  # stays under the parent that created it


def test_resumed_run_drops_steps_it_already_has(tracker):
    parent = tracker.start_parent("run 1")
    with pytest.raises(KeyboardInterrupt), tracker.child_run(parent, IDENTITY, "grpo-s0")[0] as child:
        for step in range(5):
            child.log_metrics({"train/reward/en": step / 10}, step)
        raise KeyboardInterrupt
    resumed, _ = tracker.child_run(parent, IDENTITY, "grpo-s0")
    # From a checkpoint at step 2: steps 3 and 4 come again and must not be logged twice.
    for step in range(3, 8):
        resumed.log_metrics({"train/reward/en": step / 10 + 0.05, "train/kl/en": 0.01}, step)
    resumed.finish()
    assert _steps(tracker, resumed.run_id, "train/reward/en") == [0, 1, 2, 3, 4, 5, 6, 7]
    assert _steps(tracker, resumed.run_id, "train/kl/en") == [3, 4, 5, 6, 7]  # a new key starts where it starts
    client = MlflowClient(tracker.uri)
    history = {m.step: m.value for m in client.get_metric_history(resumed.run_id, "train/reward/en")}
    assert history[4] == 0.4 and history[5] == pytest.approx(0.55)  # the first run's values are kept
    assert resumed.dropped["step_already_logged"] == 2


def test_resume_refuses_a_changed_param(tracker):
    parent = tracker.start_parent("run 1")
    child, _ = tracker.child_run(parent, IDENTITY, "grpo-s0", params={"lr": 2e-4})
    with pytest.raises(KeyboardInterrupt), child:
        raise KeyboardInterrupt
    with pytest.raises(UserError, match=r"already has param lr='0.0002', now '0.001'"):
        tracker.child_run(parent, IDENTITY, "grpo-s0", params={"lr": 1e-3, "new_key": 1})
    assert MlflowClient(tracker.uri).get_run(child.run_id).info.status == "KILLED"  # left as it was
    resumed, state = tracker.child_run(parent, IDENTITY, "grpo-s0", params={"lr": 2e-4, "new_key": 1})
    assert state == "resume"
    assert MlflowClient(tracker.uri).get_run(resumed.run_id).data.params == {"lr": "0.0002", "new_key": "1"}


def test_run_left_running_by_a_killed_process_is_reopened_once(tracker, tmp_path):
    outbox = tmp_path / "outbox"
    command = [sys.executable, str(WRITER), tracker.uri, tracker.experiment_name, str(outbox), "w0", "5", "--hold"]
    worker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_id, state = worker.stdout.readline().split()
        assert state == "new", worker.stderr.read()
        parent = tracker.start_parent("run 2")
        with pytest.raises(UserError, match=f"being written by process {worker.pid}"):
            tracker.child_run(parent, {"worker": "w0"}, "w0")
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    resumed, state = tracker.child_run(parent, {"worker": "w0"}, "w0")
    assert (state, resumed.run_id, resumed.status(), resumed.last_step()) == ("resume", run_id, "RUNNING", 4)
    for step in range(3, 8):
        resumed.log_metrics({"train/reward/en": float(step)}, step)
    resumed.finish()
    assert _steps(tracker, run_id, "train/reward/en") == list(range(8))
    assert len(_runs(tracker)) == 1


@pytest.mark.slow
def test_process_that_ends_without_finish_loses_no_metric(tracker, tmp_path):
    command = [sys.executable, str(WRITER), tracker.uri, tracker.experiment_name, str(tmp_path / "outbox"), "w1", "6",
               "--exit"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.split()[0]
    run = MlflowClient(tracker.uri).get_run(run_id)
    assert run.info.status == "RUNNING"  # the next invocation resumes it
    assert len(run.data.metrics) == 20
    assert all(_steps(tracker, run_id, key) == list(range(6)) for key in run.data.metrics)


def test_a_worker_attaches_to_the_child_the_runner_made(tracker, tmp_path):
    child, _ = tracker.child_run(tracker.start_parent("run 1"), IDENTITY, "grpo-s0", params={"lr": 2e-4})
    worker = Tracker.open(tracker.uri, tracker.experiment_name, policy=QUICK, outbox_dir=tmp_path / "worker")
    attached = worker.attach(child.run_id)
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "checkpoint" / "state.json").write_text("{}")
    attached.log_artifact(tmp_path / "checkpoint", "checkpoint")  # a folder goes as a folder
    attached.log_metrics({"train/reward/en": 0.5}, 1)
    attached.finish()
    run = MlflowClient(tracker.uri).get_run(child.run_id)
    assert run.info.status == "FINISHED" and run.data.params == {"lr": "0.0002"}
    files = [a.path for a in MlflowClient(tracker.uri).list_artifacts(child.run_id, "checkpoint")]
    assert files == ["checkpoint/state.json"]
    with pytest.raises(UserError, match="no run 0123abc"):
        worker.attach("0123abc")
