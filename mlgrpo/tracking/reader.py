"""Reading a comparison back from MLflow: its runs, their metric histories and the artifacts a report needs.

The report is built from what this returns, so it works on a machine that did not train: MLflow is the
single source of truth. Plain data out (dicts, lists, tuples); nothing here knows what a report shows.

    read_experiment(uri, name) -> ExperimentRecord: the newest parent run, and per (arm, seed) the child
    run that counts (the newest FINISHED one, else the newest), with the ones it supersedes named.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mlgrpo.errors import UserError
from mlgrpo.tracking.uris import mask_uri

# Metric histories read for a report (every step); other metrics are read as their last value only.
HISTORY_PREFIXES = ("train/", "eval/", "system/")


@dataclass
class RunRecord:
    run_id: str
    name: str
    status: str  # RUNNING | FINISHED | FAILED | KILLED
    tags: dict[str, str]
    params: dict[str, str]
    metrics: dict[str, float]  # the last value of every metric
    history: dict[str, list[tuple[int, float]]]  # metric -> [(step, value)] sorted by step, for HISTORY_PREFIXES
    start_ms: int | None
    end_ms: int | None
    artifacts: dict[str, object] = field(default_factory=dict)  # path -> parsed JSON or text

    @property
    def arm(self) -> str:
        return self.tags.get("arm", self.name)

    @property
    def seed(self) -> str:
        return self.tags.get("seed", "?")


@dataclass
class ExperimentRecord:
    name: str
    uri: str  # credentials masked
    parent: RunRecord | None  # the newest parent run (an invocation of `mlgrpo run`)
    runs: list[RunRecord]  # the child run of each (arm, seed) that counts
    superseded: list[str] = field(default_factory=list)  # other child runs of the same (arm, seed)


def read_experiment(uri: str, name: str, *, progress: Callable[[str], None] = lambda _: None,
                    artifacts: Callable[[Sequence[str]], Sequence[str]] | None = None) -> ExperimentRecord:
    """Everything a report reads. `artifacts(paths)` picks which of a child run's artifact files to read
    (default: the first and last evaluation's samples and per-prompt scores, and the data summaries)."""
    import os

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one bar per file: noise
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = _experiment(client, uri, name)
    found = client.search_runs([experiment.experiment_id], max_results=5000, order_by=["attributes.start_time DESC"])
    parents = [r for r in found if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in found if "mlflow.parentRunId" in r.data.tags]
    chosen, superseded = _choose(children)
    pick = artifacts or default_artifacts
    runs = []
    for index, run in enumerate(chosen, 1):
        progress(f"reading run {index}/{len(chosen)}: {run.info.run_name}")
        record = _record(client, run, history=True)
        for path in pick(_files(client, run.info.run_id)):
            record.artifacts[path] = _load(client, run.info.run_id, path)
        runs.append(record)
    parent = None
    if parents:
        parent = _record(client, parents[0], history=False)
        for path in _files(client, parents[0].info.run_id):
            if path.endswith(".yaml"):
                parent.artifacts[path] = _load(client, parents[0].info.run_id, path)
    return ExperimentRecord(name=name, uri=mask_uri(uri), parent=parent, runs=runs,
                            superseded=[r.info.run_name for r in superseded])


def experiment_exists(uri: str, name: str) -> bool:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri).get_experiment_by_name(name) is not None


def default_artifacts(paths: Sequence[str]) -> list[str]:
    """The first and the last file of samples/ and eval_items/, and data/*/languages.json and cards."""
    picked = []
    for folder in ("samples/", "eval_items/"):
        steps = sorted(p for p in paths if p.startswith(folder) and p.endswith(".json"))
        picked += sorted({steps[0], steps[-1]}) if steps else []
    picked += [p for p in paths if p.startswith("data/") and p.endswith(("languages.json", "_card.md"))]
    return picked


def _experiment(client, uri: str, name: str):
    try:
        experiment = client.get_experiment_by_name(name)
    except Exception as exc:  # the store's own error (unreachable server, unreadable database), for people
        raise UserError(f"cannot read MLflow at {mask_uri(uri)}: {type(exc).__name__}: {exc}") from None
    if experiment is None:
        known = [e.name for e in client.search_experiments(max_results=200)]
        hint = f"; experiments there: {', '.join(sorted(known)[:20])}" if known else "; it has no experiments"
        raise UserError(f"no MLflow experiment named {name!r} at {mask_uri(uri)}{hint}")
    return experiment


def _choose(children):
    """Per (arm, seed): the newest FINISHED child run, else the newest one; the rest are superseded."""
    by_identity: dict[tuple[str, str], list] = {}
    for run in children:  # newest first
        key = (run.data.tags.get("arm", run.info.run_name), run.data.tags.get("seed", "?"))
        by_identity.setdefault(key, []).append(run)
    chosen, superseded = [], []
    for key in sorted(by_identity):
        runs = by_identity[key]
        best = next((r for r in runs if r.info.status == "FINISHED"), runs[0])
        chosen.append(best)
        superseded += [r for r in runs if r is not best]
    return chosen, superseded


def _record(client, run, history: bool) -> RunRecord:
    histories = {}
    if history:
        for key in sorted(run.data.metrics):
            if key.startswith(HISTORY_PREFIXES):
                points = client.get_metric_history(run.info.run_id, key)
                histories[key] = sorted((int(m.step), float(m.value)) for m in points)
    return RunRecord(run_id=run.info.run_id, name=run.info.run_name, status=run.info.status,
                     tags=dict(run.data.tags), params=dict(run.data.params), metrics=dict(run.data.metrics),
                     history=histories, start_ms=run.info.start_time, end_ms=run.info.end_time)


def _files(client, run_id: str, folder: str | None = None) -> list[str]:
    out = []
    for item in client.list_artifacts(run_id, folder):
        out += _files(client, run_id, item.path) if item.is_dir else [item.path]
    return out


def _load(client, run_id: str, path: str):
    """A JSON artifact parsed, any other one as text; None when it cannot be read (listed, not there)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        try:
            local = client.download_artifacts(run_id, path, tmp)
        except Exception:  # an artifact being written while we read: the report says it is missing
            return None
        with open(local, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    if posixpath.splitext(path)[1] != ".json":
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None
