"""One MLflow run as mlgrpo writes to it: buffered metrics that never log a step twice, params checked
against what the run already has, artifacts that survive a store outage, and a clean end.

A RunHandle is made by a Tracker (mlgrpo.tracking.store). Every write goes through the run's Outbox
(mlgrpo.tracking.outbox): metrics are sent in the background, the rest right away, and all of it is
kept and retried while the store does not answer. Values are checked on the caller's thread, so a
bad metric name or a changed param fails where it was logged, not later in a background thread.

    with handle:                         # FINISHED on success, KILLED on Ctrl-C, FAILED on an exception
        handle.log_metrics({"train/reward/en": 0.5}, step=10)

This module and its siblings are the only ones in mlgrpo that import mlflow.
"""

from __future__ import annotations

import json
import math
import posixpath
import random
import sys
import time
import weakref
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, Run, RunTag

from mlgrpo.errors import UserError
from mlgrpo.tracking.names import clean_name
from mlgrpo.tracking.outbox import FlushPolicy, Outbox
from mlgrpo.tracking.params import flatten_params, safe_tags
from mlgrpo.tracking.uris import mask_text

STATUSES = ("FINISHED", "KILLED", "FAILED")
TRANSIENT_CODES = frozenset({"TEMPORARILY_UNAVAILABLE", "REQUEST_LIMIT_EXCEEDED"})  # SQLite "locked" is the first
MAX_PARAMS_TAGS = 100  # MLflow's MAX_PARAMS_TAGS_PER_BATCH
DATASET_CONTEXT_TAG = "mlflow.data.context"  # mlflow.utils.mlflow_tags.MLFLOW_DATASET_CONTEXT

_OPEN: weakref.WeakSet[RunHandle] = weakref.WeakSet()


def is_transient(exc: BaseException) -> bool:
    """True for errors that mean "the store is away or busy, try again": a refused or timed-out HTTP
    connection anywhere in the exception chain, MLflow's TEMPORARILY_UNAVAILABLE (a locked SQLite file),
    or two runs inserting the same dataset at once (DATASET_RACE)."""
    import requests
    from mlflow.exceptions import MlflowException

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (requests.exceptions.ConnectionError, requests.exceptions.Timeout,
                                requests.exceptions.RetryError, ConnectionError, TimeoutError)):
            return True
        if isinstance(current, MlflowException) and current.error_code in TRANSIENT_CODES:
            return True
        if DATASET_RACE in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


# Two runs logging the same dataset (every arm of a seed trains on the same records) at the same moment:
# MLflow's store checks that the dataset is new, then both insert it, and the second insert breaks the
# unique key. Tried again, the dataset exists and is linked to the run.
DATASET_RACE = "UNIQUE constraint failed: datasets."


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return mask_text(f"{type(exc).__name__}: {text[0] if text else ''}")[:500]


def retrying(call: Callable[[], object], what: str, timeout_s: float, display_uri: str):
    """call() again, with growing jittered pauses, while it fails transiently; a UserError after timeout_s."""
    deadline = time.monotonic() + timeout_s
    pause = 0.1
    while True:
        try:
            return call()
        except Exception as exc:
            if not is_transient(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise UserError(f"{what}: the MLflow store at {display_uri} did not answer for {timeout_s:g} s "
                                f"({one_line(exc)}); check that it is up and run again") from exc
            time.sleep(pause * (0.5 + random.random()))  # jitter: workers that collided do not collide again
            pause = min(pause * 2, 5.0)


def last_steps(run: Run) -> dict[str, int]:
    """Metric key -> the highest step the store has for it (MLflow keeps the latest value per key)."""
    return {m.key: m.step for m in run.to_proto().data.metrics}


class RunHandle:
    """Writes to one run. Made by Tracker.start_parent / child_run / attach, not directly."""

    def __init__(self, client: MlflowClient, run: Run, *, policy: FlushPolicy, outbox_root: Path, display_uri: str):
        self.client = client
        self.run_id: str = run.info.run_id
        self.run_name: str = run.info.run_name
        self.experiment_id: str = run.info.experiment_id
        self.display_uri = display_uri
        self.policy = policy
        self.dropped: Counter = Counter()  # "not_finite", "step_already_logged": metrics not sent, counted
        self._params = dict(run.data.params)
        self._last = last_steps(run)
        self._valid_keys: set[str] = set()
        self._finished = False
        self._outbox = Outbox(outbox_root / self.run_id, self._send_metrics, self._send_op, is_transient, policy)
        _OPEN.add(self)

    # ---- reading ------------------------------------------------------------------------------------

    def last_step(self) -> int:
        """The highest step of any metric of this run (-1 if none)."""
        return max(self._last.values(), default=-1)

    def status(self) -> str:
        return self.client.get_run(self.run_id).info.status

    def metric_keys(self) -> list[str]:
        self._flush_or_fail("read metric names")
        return sorted(last_steps(self.client.get_run(self.run_id)))

    def history(self, key: str) -> list[tuple[int, float]]:
        """(step, value) of one metric, by step."""
        self._flush_or_fail(f"read the history of {key}")
        return sorted((m.step, m.value) for m in self.client.get_metric_history(self.run_id, key))

    # ---- writing ------------------------------------------------------------------------------------

    def log_metrics(self, metrics: Mapping[str, float | None], step: int) -> None:
        """Buffer one step's metrics. None and non-finite values, and steps at or below the last step
        this run has for a key (a run resumed from an older checkpoint), are counted in `dropped`."""
        self._check_open()
        stamp = int(time.time() * 1000)
        rows = []
        for key, value in metrics.items():
            if key not in self._valid_keys:
                self._validate_key(key)
            if value is None or not math.isfinite(value):
                self.dropped["not_finite"] += 1
            elif step <= self._last.get(key, -1):
                self.dropped["step_already_logged"] += 1
            else:
                self._last[key] = step
                rows.append((key, float(value), stamp, int(step)))
        if rows:
            self._outbox.add_metrics(rows)

    def log_params(self, params: Mapping[str, object]) -> None:
        """Flattened, masked, cut to MLflow's limit. A key the run already has must keep its value."""
        self._check_open()
        flat = flatten_params(params)
        changed = {k: (self._params[k], v) for k, v in flat.items() if k in self._params and self._params[k] != v}
        if changed:
            key, (old, new) = next(iter(changed.items()))
            raise UserError(
                f"run {self.run_name!r} ({self.run_id}) already has param {key}={old[:80]!r}, now {new[:80]!r} "
                f"({len(changed)} params differ): a resumed run must use the config it started with; "
                f"change the config (its hash names a new run) or delete the old run"
            )
        new = {k: v for k, v in flat.items() if k not in self._params}
        if new:
            self._params.update(new)
            self._outbox.add_op({"kind": "params", "values": new})

    def set_tags(self, tags: Mapping[str, object]) -> None:
        self._check_open()
        if tags:
            self._outbox.add_op({"kind": "tags", "values": safe_tags(tags)})

    def log_artifact(self, local_path: str | Path, artifact_path: str | None = None) -> None:
        """Upload a file or folder. It is read when sent: keep it in place until finish()."""
        self._check_open()
        path = Path(local_path)
        if not path.exists():
            raise UserError(f"cannot log {path} as an artifact of run {self.run_name!r}: no such file or folder")
        kind = "artifacts" if path.is_dir() else "artifact"
        self._outbox.add_op({"kind": kind, "path": str(path.resolve()), "artifact_path": artifact_path})

    def log_text(self, text: str, artifact_file: str) -> None:
        self._log_staged(artifact_file, lambda p: p.write_text(text, encoding="utf-8"))

    def log_dict(self, obj: Mapping, artifact_file: str) -> None:
        """As JSON, or YAML when artifact_file ends in .yaml / .yml."""
        if artifact_file.endswith((".yaml", ".yml")):
            import yaml

            text = yaml.safe_dump(obj, allow_unicode=True, sort_keys=False)
        else:
            text = json.dumps(obj, indent=2, ensure_ascii=False, default=str)
        self.log_text(text, artifact_file)

    def log_figure(self, figure, artifact_file: str) -> None:
        """A matplotlib Figure, rendered now (the caller may close it), format from the extension."""
        self._log_staged(artifact_file, lambda p: figure.savefig(p, dpi=110, bbox_inches="tight"))

    def log_table(self, rows, artifact_file: str) -> None:
        """Rows (list of dicts or a DataFrame) as an MLflow table (client.log_table: the UI lists it
        with the run's evaluation tables). artifact_file must end in .json."""
        self._check_open()
        if not artifact_file.endswith(".json"):
            raise ValueError(f"a table artifact must be a .json file, not {artifact_file!r}")
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
        path = self._outbox.stage(posixpath.basename(artifact_file))
        frame.to_json(path, orient="split", index=False, force_ascii=False)
        self._outbox.add_op({"kind": "table", "path": str(path), "artifact_file": artifact_file, "staged": True})

    def log_dataset(self, frame: pd.DataFrame, name: str, context: str, source: str | None = None) -> None:
        """MLflow dataset tracking (mlflow.data.from_pandas + log_inputs): name, digest, schema and
        profile show in the run's "Datasets used", with `context` ("train", "eval")."""
        self._check_open()
        import mlflow.data

        dataset = mlflow.data.from_pandas(frame, name=name, source=source)
        entity = dataset._to_mlflow_entity().to_dictionary()  # what mlflow.log_input sends, as plain JSON
        self._outbox.add_op({"kind": "dataset", "entity": entity, "context": context})

    # ---- ending -------------------------------------------------------------------------------------

    def flush(self, timeout_s: float | None = None) -> bool:
        """Send what is buffered now. True when the store has everything; False when it did not answer
        (the writes stay buffered). With timeout_s, keep trying that long."""
        sent = self._outbox.drain(timeout_s) if timeout_s else self._outbox.send(force=True)
        self._outbox.raise_fatal()
        return sent

    def finish(self, status: str = "FINISHED") -> None:
        """Send everything and set the run's status. If the store does not answer within
        policy.finish_timeout_s, the writes are saved to disk and a UserError says where; the run stays
        RUNNING in the store and the next process that opens it sends them."""
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
        if self._finished:
            return
        self._finished = True
        _OPEN.discard(self)
        try:
            if self.dropped:
                counts = {f"mlgrpo.dropped.{k}": str(v) for k, v in self.dropped.items()}
                self._outbox.add_op({"kind": "tags", "values": counts})
            self._outbox.add_op({"kind": "status", "status": status})
            sent = self._outbox.drain(self.policy.finish_timeout_s)
        finally:
            self._outbox.close()
        if not sent:
            self._spill_and_raise(f"{self.policy.finish_timeout_s:g} s")
        self._outbox.remove_if_empty()

    def __enter__(self) -> RunHandle:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self.finish("FINISHED")
        else:
            self.finish("KILLED" if issubclass(kind, KeyboardInterrupt) else "FAILED")

    # ---- plumbing -----------------------------------------------------------------------------------

    def replay_spill(self) -> int:
        """Send what an earlier process saved for this run (see finish); returns how many writes."""
        count = self._outbox.load_spill(keep=lambda row: row[3] > self._last.get(row[0], -1))
        if not count:
            self._outbox.forget_spill()
            return 0
        if not self._outbox.drain(self.policy.setup_timeout_s):
            raise UserError(f"run {self.run_name!r} ({self.run_id}): the MLflow store at {self.display_uri} did not "
                            f"take the {count} writes saved by an earlier process ({self._outbox.last_error}); "
                            f"they stay in {self._outbox.folder}; run again when the store is up")
        self._outbox.forget_spill()
        run = self.client.get_run(self.run_id)
        self._last, self._params = last_steps(run), dict(run.data.params)
        return count

    def at_exit(self) -> None:
        """The process ends without finish(): send what we can, save the rest, leave the run RUNNING
        (the next process resumes it)."""
        if self._finished:
            return
        self._finished = True
        sent = self._outbox.drain(min(10.0, self.policy.finish_timeout_s))
        self._outbox.close()
        if not sent:
            path = self._outbox.spill()
            print(f"mlgrpo: run {self.run_id}: writes the MLflow store did not take are saved in {path}; they are "
                  f"sent when the run is opened again", file=sys.stderr, flush=True)

    def _spill_and_raise(self, waited: str) -> None:
        metrics, ops = self._outbox.pending()
        path = self._outbox.spill()
        raise UserError(
            f"run {self.run_name!r} ({self.run_id}): the MLflow store at {self.display_uri} did not take "
            f"{metrics} metrics and {ops} other writes within {waited} ({self._outbox.last_error}); they are "
            f"saved in {path} and are sent when the run is opened again (run the same experiment again)"
        )

    def _flush_or_fail(self, what: str) -> None:
        if not self._finished and not self.flush(self.policy.setup_timeout_s):
            raise UserError(f"cannot {what} of run {self.run_id}: the MLflow store at {self.display_uri} "
                            f"does not answer ({self._outbox.last_error})")

    def _check_open(self) -> None:
        if self._finished:
            raise RuntimeError(f"run {self.run_name!r} ({self.run_id}) is finished; open it again to log more")
        self._outbox.raise_fatal()

    def _validate_key(self, key: str) -> None:
        if not key or clean_name(key) != key or len(key) > 250:
            raise ValueError(f"{key!r} is not a metric name MLflow accepts; pass it through "
                             f"mlgrpo.tracking.metric_name or clean_name first")
        self._valid_keys.add(key)

    def _log_staged(self, artifact_file: str, write: Callable[[Path], object]) -> None:
        self._check_open()
        folder, name = posixpath.split(artifact_file)
        path = self._outbox.stage(name)
        write(path)
        self._outbox.add_op({"kind": "artifact", "path": str(path), "artifact_path": folder or None, "staged": True})

    def _send_metrics(self, rows: list[tuple[str, float, int, int]]) -> None:
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, t, s) for k, v, t, s in rows], synchronous=True)

    def _send_op(self, op: dict) -> None:
        _OPS[op["kind"]](self, op)


def _send_params(handle: RunHandle, op: dict) -> None:
    items = list(op["values"].items())
    for i in range(0, len(items), MAX_PARAMS_TAGS):
        handle.client.log_batch(handle.run_id, params=[Param(k, v) for k, v in items[i:i + MAX_PARAMS_TAGS]])


def _send_tags(handle: RunHandle, op: dict) -> None:
    items = list(op["values"].items())
    for i in range(0, len(items), MAX_PARAMS_TAGS):
        handle.client.log_batch(handle.run_id, tags=[RunTag(k, v) for k, v in items[i:i + MAX_PARAMS_TAGS]])


def _send_artifact(handle: RunHandle, op: dict) -> None:
    handle.client.log_artifact(handle.run_id, op["path"], op["artifact_path"])


def _send_folder(handle: RunHandle, op: dict) -> None:
    handle.client.log_artifacts(handle.run_id, op["path"], op["artifact_path"])


def _send_table(handle: RunHandle, op: dict) -> None:
    # dtype=False: keep "007" and "2024-01-01" as the strings they were
    frame = pd.read_json(op["path"], orient="split", dtype=False)
    handle.client.log_table(handle.run_id, frame, op["artifact_file"])


def _send_dataset(handle: RunHandle, op: dict) -> None:
    entry = DatasetInput(Dataset(**op["entity"]), [InputTag(DATASET_CONTEXT_TAG, op["context"])])
    handle.client.log_inputs(handle.run_id, datasets=[entry])


def _send_status(handle: RunHandle, op: dict) -> None:
    handle.client.set_terminated(handle.run_id, op["status"])


_OPS: dict[str, Callable[[RunHandle, dict], None]] = {
    "params": _send_params, "tags": _send_tags, "artifact": _send_artifact, "artifacts": _send_folder,
    "table": _send_table,
    "dataset": _send_dataset, "status": _send_status,
}


def finish_open_runs_at_exit() -> None:
    for handle in list(_OPEN):
        handle.at_exit()
