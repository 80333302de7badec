"""The outbox on its own, with a store stand-in that can be switched off: order, batching, backoff,
spilling to disk and loading back, and errors that surface on the caller's thread.

(The same paths against a real MLflow server that goes down: test_outage.py.)
"""

from __future__ import annotations

import json
import time

import pytest

from mlgrpo.tracking.outbox import BATCH, FlushPolicy, Outbox

POLICY = FlushPolicy(interval_s=0.05, max_backoff_s=0.2, finish_timeout_s=1.0, setup_timeout_s=1.0)


class Store:
    """Accepts writes while `up`; raises ConnectionError (transient) while down."""

    def __init__(self):
        self.up, self.batches, self.ops = True, [], []

    def metrics(self, rows):
        if not self.up:
            raise ConnectionError("refused")
        self.batches.append(list(rows))

    def op(self, op):
        if not self.up:
            raise ConnectionError("refused")
        if op.get("bad"):
            raise ValueError("refused for good")
        self.ops.append(op)


def _outbox(tmp_path, store) -> Outbox:
    return Outbox(tmp_path / "run1", store.metrics, store.op, lambda e: isinstance(e, ConnectionError), POLICY)


def _rows(steps, key="train/reward/en"):
    return [(key, float(s), 1000 + s, s) for s in steps]


def test_metrics_go_in_batches_of_at_most_1000_in_order(tmp_path):
    store = Store()
    box = _outbox(tmp_path, store)
    box.add_metrics(_rows(range(2500)))
    assert box.send(force=True)
    assert [len(b) for b in store.batches] == [BATCH, BATCH, 500]
    assert [row[3] for batch in store.batches for row in batch] == list(range(2500))
    box.close()


def test_background_thread_sends_without_being_asked(tmp_path):
    store = Store()
    box = _outbox(tmp_path, store)
    box.add_metrics(_rows(range(3)))
    deadline = time.monotonic() + 10
    while box.pending() != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [row[3] for batch in store.batches for row in batch] == [0, 1, 2]
    box.close()


def test_down_store_keeps_everything_then_sends_it_once(tmp_path):
    store = Store()
    box = _outbox(tmp_path, store)
    store.up = False
    box.add_metrics(_rows(range(5)))
    box.add_op({"kind": "tags", "values": {"a": "1"}})  # tries at once, fails, keeps it
    assert box.send(force=True) is False and box.pending() == (5, 1)
    assert box.send() is False  # inside the backoff pause: not even tried
    assert "ConnectionError: refused" == box.last_error
    store.up = True
    assert box.drain(timeout_s=5)
    assert store.ops == [{"kind": "tags", "values": {"a": "1"}}]
    assert [row[3] for batch in store.batches for row in batch] == [0, 1, 2, 3, 4]
    box.close()


def test_spill_and_load_keeps_only_what_the_store_lacks(tmp_path):
    store = Store()
    store.up = False
    box = _outbox(tmp_path, store)
    box.add_metrics(_rows(range(4)) + _rows(range(2), key="train/kl"))
    box.add_op({"kind": "status", "status": "FINISHED"})
    assert not box.drain(timeout_s=0.3)
    box.close()
    path = box.spill()
    assert box.pending() == (0, 0)
    assert len(json.loads(path.read_text())["metrics"]) == 6
    # A later process: the store already has reward steps 0-1 (sent before a crash), nothing of kl.
    store.up = True
    later = _outbox(tmp_path, store)
    last = {"train/reward/en": 1}
    assert later.load_spill(keep=lambda row: row[3] > last.get(row[0], -1)) == 1 + 2 + 2
    assert later.drain(timeout_s=5)
    later.forget_spill()
    sent = sorted((row[0], row[3]) for batch in store.batches for row in batch)
    assert sent == [("train/kl", 0), ("train/kl", 1), ("train/reward/en", 2), ("train/reward/en", 3)]
    assert store.ops == [{"kind": "status", "status": "FINISHED"}] and not path.exists()
    later.remove_if_empty()
    assert not (tmp_path / "run1").exists()


def test_a_refused_write_raises_on_the_callers_thread_and_is_not_retried(tmp_path):
    store = Store()
    box = _outbox(tmp_path, store)
    with pytest.raises(ValueError, match="for good"):
        box.add_op({"kind": "tags", "bad": True})
    assert box.pending() == (0, 0)
    box.close()
