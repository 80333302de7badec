"""The writes of one run that the store has not accepted yet, and the thread that sends them.

Training never waits on the tracking store: `log_metrics` appends to a list, and a background thread
sends the list in batches every `interval_s` (one MLflow log_batch call per 1000 metrics). Other writes
(params, tags, artifacts, tables, datasets, the final status) are "ops": plain JSON records sent in
order, right away when the store is up. When the store does not answer (a server that went down, a
SQLite file that stays locked), everything stays here and is retried with growing pauses; nothing is
dropped. If the store is still away when the run must end, `spill()` writes the pending writes to
`<folder>/pending.json` (files to upload are already in `<folder>/files/`), and the next process that
opens the run sends them (`load_spill`).

Knows nothing about MLflow: the run handle passes in how to send a batch and an op, and which
errors mean "try again later".
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mlgrpo.tracking.uris import mask_text

BATCH = 1000  # MLflow's MAX_METRICS_PER_BATCH
SPILL_FILE = "pending.json"

MetricRow = tuple[str, float, int, int]  # key, value, timestamp (ms), step


@dataclass(frozen=True)
class FlushPolicy:
    """How often buffered writes are sent, and how long to keep trying when the store does not answer."""

    interval_s: float = 5.0  # background sends; at 0.2 s a step, 25 steps share one batch
    max_backoff_s: float = 60.0  # longest pause between tries while the store is unreachable
    finish_timeout_s: float = 60.0  # finish() keeps trying this long, then saves the writes to disk
    setup_timeout_s: float = 30.0  # creating or finding a run retries transient errors this long


class Outbox:
    """Pending writes of one run (see the module docstring). Thread-safe."""

    def __init__(self, folder: Path, send_metrics: Callable[[list[MetricRow]], None], send_op: Callable[[dict], None],
                 is_transient: Callable[[BaseException], bool], policy: FlushPolicy):
        self.folder = folder
        self._send_metrics, self._send_op, self._is_transient = send_metrics, send_op, is_transient
        self.policy = policy
        self.metrics: list[MetricRow] = []
        self.ops: list[dict] = []
        self.last_error: str | None = None
        self._failures = 0
        self._retry_at = 0.0
        self._fatal: BaseException | None = None
        self._lock = threading.Lock()  # guards the lists
        self._send_lock = threading.Lock()  # one sender at a time: the thread, or flush() on the caller's thread
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._staged = 0

    # ---- adding -------------------------------------------------------------------------------------

    def add_metrics(self, rows: list[MetricRow]) -> None:
        self.raise_fatal()
        with self._lock:
            self.metrics.extend(rows)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"mlgrpo-outbox-{self.folder.name}", daemon=True)
            self._thread.start()

    def add_op(self, op: dict) -> None:
        """Queue an op and try to send everything now (unless the store failed moments ago)."""
        self.raise_fatal()
        with self._lock:
            self.ops.append(op)
        self.send()

    def stage(self, name: str) -> Path:
        """A fresh path named `name` under folder/files/, for a file that an op will upload."""
        with self._lock:
            self._staged += 1
            path = self.folder / "files" / f"{self._staged:06d}" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    # ---- sending ------------------------------------------------------------------------------------

    def pending(self) -> tuple[int, int]:
        with self._lock:
            return len(self.metrics), len(self.ops)

    def send(self, force: bool = False) -> bool:
        """One pass over ops, then metrics. True when nothing is left.

        A transient failure keeps the rest and schedules the next try (force ignores the schedule);
        any other failure removes the write that caused it and raises.
        """
        with self._send_lock:
            if not force and time.monotonic() < self._retry_at:
                return False
            try:
                self._send_ops()
                self._send_metric_batches()
            except BaseException as exc:
                if not self._is_transient(exc):
                    raise
                self._failures += 1
                lines = str(exc).strip().splitlines()
                self.last_error = mask_text(f"{type(exc).__name__}: {lines[0] if lines else ''}")[:500]
                pause = min(self.policy.max_backoff_s, self.policy.interval_s * 2 ** (self._failures - 1))
                self._retry_at = time.monotonic() + pause
                return False
            self._failures, self._retry_at = 0, 0.0
            return self.pending() == (0, 0)

    def _send_ops(self) -> None:
        while True:
            with self._lock:
                if not self.ops:
                    return
                op = self.ops[0]
            try:
                self._send_op(op)
            except BaseException as exc:
                if not self._is_transient(exc):
                    with self._lock:
                        self.ops.pop(0)
                raise
            with self._lock:
                self.ops.pop(0)
            if op.get("staged"):
                shutil.rmtree(Path(op["path"]).parent, ignore_errors=True)

    def _send_metric_batches(self) -> None:
        while True:
            with self._lock:
                batch = self.metrics[:BATCH]
            if not batch:
                return
            try:
                self._send_metrics(batch)
            except BaseException as exc:
                if not self._is_transient(exc):
                    with self._lock:
                        del self.metrics[: len(batch)]
                    raise RuntimeError(f"{len(batch)} metrics were refused by the store and dropped: {exc}") from exc
                raise
            with self._lock:
                del self.metrics[: len(batch)]

    def drain(self, timeout_s: float) -> bool:
        """Send until nothing is left (True) or `timeout_s` has passed (False)."""
        deadline = time.monotonic() + timeout_s
        pause = 0.25
        while True:
            if self.send(force=True):
                return True
            if time.monotonic() + pause > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 5.0)

    def _loop(self) -> None:
        while not self._stop.wait(self.policy.interval_s):
            try:
                self.send()
            except BaseException as exc:  # kept for the caller's thread: raise_fatal() re-raises it there
                self._fatal = exc
                return

    def raise_fatal(self) -> None:
        if self._fatal is not None:
            fatal, self._fatal = self._fatal, None
            raise fatal

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=max(30.0, self.policy.interval_s * 2))
        self._thread = None

    # ---- spilling -----------------------------------------------------------------------------------

    def spill(self) -> Path:
        """Write the pending writes to folder/pending.json and clear them.

        Overwrites: a handle always loads the earlier spill of its run first (`load_spill`), so what is
        pending here already includes it.
        """
        path = self.folder / SPILL_FILE
        with self._lock:
            record = {"metrics": [list(row) for row in self.metrics], "ops": list(self.ops)}
            self.metrics.clear()
            self.ops.clear()
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)  # atomic: a SIGKILL mid-write leaves the earlier spill intact
        return path

    def load_spill(self, keep: Callable[[MetricRow], bool]) -> int:
        """Queue what a previous process spilled for this run, metrics filtered by `keep`; returns how
        many writes were queued. The file stays until they are sent (`forget_spill`): a process killed
        while sending them leaves it for the next one, and `keep` then skips the metrics the store got.
        """
        path = self.folder / SPILL_FILE
        if not path.exists():
            return 0
        record = json.loads(path.read_text(encoding="utf-8"))
        rows = [row for row in (tuple(r) for r in record["metrics"]) if keep(row)]
        with self._lock:
            self.ops[:0] = record["ops"]
            self.metrics[:0] = rows
        return len(record["ops"]) + len(rows)

    def forget_spill(self) -> None:
        (self.folder / SPILL_FILE).unlink(missing_ok=True)

    def remove_if_empty(self) -> None:
        """Delete the run's folder once nothing is pending and no spill is kept."""
        if self.pending() == (0, 0) and not (self.folder / SPILL_FILE).exists():
            shutil.rmtree(self.folder, ignore_errors=True)
