"""The tracking server goes down mid-run: training does not wait, nothing is lost, nothing is doubled.

Run b keeps logging through the outage and flushes once the server is back. Run a has to finish
while the server is down: its writes are saved to disk, and the next process that opens the run
sends them (the run then reads FINISHED, as it would have).
"""

from __future__ import annotations

import time

import pytest
from mlflow import MlflowClient

from mlgrpo.errors import UserError
from mlgrpo.tracking import Tracker

from .conftest import QUICK

KEYS = ("train/reward/en", "train/reward/ja", "train/reward/macro")


def _log(handle, steps) -> float:
    started = time.perf_counter()
    for step in steps:
        handle.log_metrics({key: step + i / 10 for i, key in enumerate(KEYS)}, step)
    return time.perf_counter() - started


def _histories(uri: str, run_id: str) -> dict[str, list[tuple[int, float]]]:
    client = MlflowClient(uri)
    return {key: sorted((m.step, m.value) for m in client.get_metric_history(run_id, key)) for key in KEYS}


@pytest.mark.slow
def test_server_outage_loses_nothing_and_doubles_nothing(mlflow_server, tmp_path, reliability):
    outbox = tmp_path / "outbox"
    tracker = Tracker.open(mlflow_server.uri, "outage", policy=QUICK, outbox_dir=outbox)
    parent = tracker.start_parent("outage 1")
    a, _ = tracker.child_run(parent, {"arm": "a"}, "a")
    b, _ = tracker.child_run(parent, {"arm": "b"}, "b")
    _log(a, range(5)), _log(b, range(5))
    assert a.flush(timeout_s=30) and b.flush(timeout_s=30)

    mlflow_server.stop()
    try:
        assert _log(a, range(5, 10)) < 0.5 and _log(b, range(5, 10)) < 0.5  # buffered: training does not wait
        b.set_tags({"written": "during the outage"})
        b.log_params({"late_param": 1})
        b.log_text("logged while the server was down\n", "notes/outage.txt")
        started = time.monotonic()
        assert b.flush() is False  # still buffered, no exception
        assert time.monotonic() - started < 10
        with pytest.raises(UserError, match="saved in") as caught:
            a.finish()
        assert "\n" not in str(caught.value)
        assert (outbox / a.run_id / "pending.json").exists()
    finally:
        mlflow_server.start()

    assert b.flush(timeout_s=60)
    b.finish()
    expected = {key: [(step, step + i / 10) for step in range(10)] for i, key in enumerate(KEYS)}
    assert _histories(tracker.uri, b.run_id) == expected
    run_b = MlflowClient(tracker.uri).get_run(b.run_id)
    assert run_b.data.tags["written"] == "during the outage" and run_b.data.params["late_param"] == "1"
    assert [f.path for f in MlflowClient(tracker.uri).list_artifacts(b.run_id, "notes")] == ["notes/outage.txt"]

    # A later process (a new tracker) opens run a: the saved writes are sent first, then its state read.
    again = Tracker.open(mlflow_server.uri, "outage", policy=QUICK, outbox_dir=outbox)
    a2, state = again.child_run(again.start_parent("outage 2"), {"arm": "a"}, "a")
    assert (state, a2.run_id) == ("finished", a.run_id)
    assert _histories(tracker.uri, a.run_id) == expected
    assert not (outbox / a.run_id / "pending.json").exists()
    reliability.record("fault", "MLflow server stopped mid-run and restarted: buffered writes delivered, none twice", "survived")
