"""The experiment layout in MLflow: one experiment per YAML name, a parent run per invocation, a child
run per arm x seed, found again by its identity so that running the same file twice resumes.

    tracker = Tracker.open(uri, "quickstart")          # UserError at once if a server does not answer
    parent = tracker.start_parent("2026-11-29 quickstart", tags, params)
    child, state = tracker.child_run(parent, {"arm": "grpo", "seed": "0", "config_hash": h}, "grpo-s0", tags, params)
    # state "new": created under parent; "finished": done before, skip it; "resume": it was RUNNING
    # (its process died), FAILED or KILLED, and is RUNNING again with its metrics and steps kept

A child run's identity is a hash of the identity dict, stored as the tag mlgrpo.identity; it is looked
up in the whole experiment, whatever parent created it, so a re-run never duplicates a child. A run
left RUNNING is reopened only if the process that owned it (tag mlgrpo.owner: host, pid, start time)
is gone; a live owner on this machine is an error, and one on another machine cannot be checked
(the run is reopened with a warning).

Several processes may open one SQLite store at once: creating its tables is serialised with a lock
file beside it (MLflow's migrations race otherwise), and "database is locked" is retried with
jittered backoff. Runs only write through RunHandle (mlgrpo.tracking.run).
"""

from __future__ import annotations

import atexit
import contextlib
import getpass
import hashlib
import json
import os
import socket
import sqlite3
import subprocess
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path

from mlflow import MlflowClient
from mlflow.entities import ViewType
from mlflow.exceptions import MlflowException

from mlgrpo import __version__
from mlgrpo.errors import UserError
from mlgrpo.runtime import cache_dir
from mlgrpo.tracking.outbox import FlushPolicy
from mlgrpo.tracking.params import safe_tags
from mlgrpo.tracking.run import RunHandle, finish_open_runs_at_exit, one_line, retrying
from mlgrpo.tracking.uris import is_http, mask_uri, require_server, sqlite_path

IDENTITY_TAG = "mlgrpo.identity"
OWNER_TAG = "mlgrpo.owner"
ROLE_TAG = "mlgrpo.role"
PARENT_TAG = "mlflow.parentRunId"  # MLflow's own: the UI nests child runs under it

# MLflow retries a refused HTTP connection 7 times with pauses up to 64 s (minutes per call). Our outbox
# retries on its own schedule and must learn quickly that the server is away: one immediate retry
# (which also covers a stale pooled connection after a server restart). Users' own settings win.
_HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                  "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}
# MLflow prints "View run at <tracking URI>/..." when a run ends, password included; Tracker.run_url
# gives the masked address instead. Forced, not a default: credentials must never be printed.
_SUPPRESS_URL_PRINT = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"

atexit.register(finish_open_runs_at_exit)


def default_outbox_dir() -> Path:
    """$MLGRPO_CACHE/outbox, else $XDG_CACHE_HOME/mlgrpo/outbox, else ~/.cache/mlgrpo/outbox."""
    return cache_dir("outbox")


def identity_key(identity: Mapping[str, object]) -> str:
    """A stable 16-hex-digit key for an identity dict (order of keys does not matter)."""
    text = json.dumps({str(k): str(v) for k, v in identity.items()}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _process_start(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks) from /proc (Linux); None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may contain spaces and ")"
    return fields[0], fields[19]


def owner_tag() -> str:
    start = _process_start(os.getpid())
    return f"{socket.gethostname()}:{os.getpid()}:{start[1] if start else ''}"


def owner_alive(owner: str) -> bool | None:
    """Whether the process named by an owner tag still runs: True / False, None when it is on another
    machine. A zombie (killed, not yet reaped) counts as gone; so does this very process."""
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return False  # not a tag mlgrpo wrote
    host, pid, start = parts[0], int(parts[1]), parts[2]
    if host != socket.gethostname():
        return None
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process with that pid
        pass
    now = _process_start(pid)
    if now is None:
        return not start  # no /proc: trust the pid alone
    return now[0] != "Z" and (not start or now[1] == start)


def _git_tags() -> dict[str, str]:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return {}
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):  # no git on this machine
        return {}
    return {"mlflow.source.git.commit": head.stdout.strip(),
            "mlgrpo.git_dirty": "true" if dirty.stdout.strip() else "false"}


def _has_tables(db: Path) -> bool:
    """Whether MLflow has created its tables in this SQLite file (alembic_version is made first)."""
    if not db.exists():
        return False
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as connection:
        found = connection.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='alembic_version'")
        return found.fetchone() is not None


@contextlib.contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """While a new SQLite store is created, hold an exclusive lock on <db>.lock (POSIX; elsewhere none).

    MLflow creates the tables of a new file (and never migrates an existing one by itself). Whoever
    finds no tables keeps the lock through the creation; the others wait for it, find the tables and
    go on in parallel (opening an existing store costs each process seconds of its own).
    """
    db = sqlite_path(uri)
    try:
        import fcntl
    except ImportError:  # Windows: open one process first, then start the others
        fcntl = None
    if db is None or fcntl is None:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{db}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _has_tables(db):
                fcntl.flock(lock, fcntl.LOCK_UN)
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class Tracker:
    """One experiment in one MLflow store. Open with Tracker.open."""

    def __init__(self, client: MlflowClient, uri: str, experiment_id: str, experiment_name: str,
                 policy: FlushPolicy, outbox_dir: Path):
        self.client, self.uri = client, uri
        self.display_uri = mask_uri(uri)
        self.experiment_id, self.experiment_name = experiment_id, experiment_name
        self.policy, self.outbox_dir = policy, outbox_dir
        self._standard_tags = {"mlgrpo.version": __version__, "mlflow.source.name": "mlgrpo",
                               "mlflow.source.type": "LOCAL", "mlflow.user": getpass.getuser(), **_git_tags()}

    @classmethod
    def open(cls, uri: str, experiment_name: str, *, policy: FlushPolicy = FlushPolicy(),
             outbox_dir: str | Path | None = None, connect_timeout_s: float = 3.0) -> Tracker:
        """Open (creating if needed) the experiment `experiment_name` in the store at `uri`."""
        if not experiment_name or len(experiment_name) > 500:
            raise UserError(f"an MLflow experiment name must have 1 to 500 characters, not {len(experiment_name)}")
        require_server(uri, connect_timeout_s)
        if is_http(uri):
            for var, value in _HTTP_DEFAULTS.items():
                os.environ.setdefault(var, value)
            os.environ[_SUPPRESS_URL_PRINT] = "true"
        display = mask_uri(uri)
        try:
            with _store_lock(uri):
                client = MlflowClient(tracking_uri=uri)
                experiment = retrying(lambda: _get_or_create(client, experiment_name),
                                      f"opening experiment {experiment_name!r}", policy.setup_timeout_s, display)
        except (MlflowException, OSError) as exc:  # OSError: a SQLite folder that cannot be created or read
            raise UserError(f"cannot open the MLflow store at {display}: {one_line(exc)}") from exc
        outbox = Path(outbox_dir) if outbox_dir is not None else default_outbox_dir()
        return cls(client, uri, experiment.experiment_id, experiment_name, policy, outbox)

    # ---- runs ---------------------------------------------------------------------------------------

    def start_parent(self, run_name: str, tags: Mapping[str, object] | None = None,
                     params: Mapping[str, object] | None = None) -> RunHandle:
        """A new parent run for one invocation of the comparison."""
        all_tags = {**self._standard_tags, ROLE_TAG: "parent", OWNER_TAG: owner_tag(), **(tags or {})}
        handle = self._create(run_name, all_tags)
        if params:
            handle.log_params(params)
        return handle

    def child_run(self, parent: RunHandle, identity: Mapping[str, object], run_name: str,
                  tags: Mapping[str, object] | None = None,
                  params: Mapping[str, object] | None = None) -> tuple[RunHandle, str]:
        """The child run with this identity: ("new" | "finished" | "resume"); see the module docstring."""
        key = identity_key(identity)
        found = self._find(key)
        if not found:
            all_tags = {**self._standard_tags, **{str(k): v for k, v in identity.items()}, ROLE_TAG: "child",
                        IDENTITY_TAG: key, PARENT_TAG: parent.run_id, OWNER_TAG: owner_tag(), **(tags or {})}
            handle = self._create(run_name, all_tags)
            if params:
                handle.log_params(params)
            return handle, "new"
        if len(found) > 1:
            ids = ", ".join(run.info.run_id for run in found)
            raise UserError(f"experiment {self.experiment_name!r} has {len(found)} runs for {dict(identity)} ({ids}); "
                            f"delete all but one in the MLflow UI (mlgrpo ui) and run again")
        self._check_owner(found[0], identity)  # before anything is written to it
        handle = self._reopen(found[0].info.run_id)
        run = self.client.get_run(handle.run_id)  # after the replay: it may have ended as FINISHED
        if run.info.status == "FINISHED":
            return handle, "finished"
        if params:
            handle.log_params(params)  # first: a changed config stops here and leaves the run as it was
        resumes = int(run.data.tags.get("mlgrpo.resumes", "0")) + 1
        retrying(lambda: self.client.update_run(handle.run_id, status="RUNNING"), f"reopening run {run_name!r}",
                 self.policy.setup_timeout_s, self.display_uri)
        handle.set_tags({OWNER_TAG: owner_tag(), "mlgrpo.resumes": str(resumes),
                         "mlgrpo.last_parent": parent.run_id, **(tags or {})})
        return handle, "resume"

    def attach(self, run_id: str) -> RunHandle:
        """A handle on an existing run, e.g. in a worker process for a child the runner created."""
        handle = self._reopen(run_id)
        handle.set_tags({OWNER_TAG: owner_tag()})
        return handle

    def run_url(self, run_id: str) -> str | None:
        """The run's page on an HTTP(S) tracking server (credentials masked); None for a local store."""
        if not is_http(self.uri):
            return None
        return f"{self.display_uri.rstrip('/')}/#/experiments/{self.experiment_id}/runs/{run_id}"

    # ---- plumbing -----------------------------------------------------------------------------------

    def _handle(self, run) -> RunHandle:
        return RunHandle(self.client, run, policy=self.policy, outbox_root=self.outbox_dir,
                         display_uri=self.display_uri)

    def _create(self, run_name: str, tags: Mapping[str, object]) -> RunHandle:
        run = retrying(lambda: self.client.create_run(self.experiment_id, run_name=run_name, tags=safe_tags(tags)),
                       f"creating run {run_name!r}", self.policy.setup_timeout_s, self.display_uri)
        return self._handle(run)

    def _reopen(self, run_id: str) -> RunHandle:
        try:
            run = retrying(lambda: self.client.get_run(run_id), f"reading run {run_id}",
                           self.policy.setup_timeout_s, self.display_uri)
        except MlflowException as exc:
            raise UserError(f"no run {run_id} in the MLflow store at {self.display_uri} ({one_line(exc)})") from exc
        handle = self._handle(run)
        handle.replay_spill()
        return handle

    def _find(self, key: str) -> list:
        query = f"tags.`{IDENTITY_TAG}` = '{key}'"
        return retrying(
            lambda: self.client.search_runs([self.experiment_id], query, run_view_type=ViewType.ACTIVE_ONLY,
                                            max_results=10, order_by=["attributes.start_time ASC"]),
            "looking for earlier runs", self.policy.setup_timeout_s, self.display_uri)

    def _check_owner(self, run, identity: Mapping[str, object]) -> None:
        owner = run.data.tags.get(OWNER_TAG, "")
        if run.info.status != "RUNNING" or not owner:
            return
        alive = owner_alive(owner)
        if alive:
            raise UserError(f"run {run.info.run_name!r} ({run.info.run_id}) for {dict(identity)} is being written "
                            f"by process {owner.split(':')[1]} on this machine; wait for it to end or stop it, "
                            f"then run again")
        if alive is None:
            warnings.warn(f"run {run.info.run_id} was left RUNNING by {owner} on another machine; "
                          f"reopening it here (stop that process if it still runs)", stacklevel=3)


def _get_or_create(client: MlflowClient, name: str):
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        try:
            client.create_experiment(name)
        except MlflowException as exc:  # another process created it between our two calls
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            raise MlflowException("experiment not visible after creation", error_code="TEMPORARILY_UNAVAILABLE")
    if experiment.lifecycle_stage == "deleted":
        raise UserError(f"MLflow experiment {name!r} was deleted; restore it (mlflow experiments restore "
                        f"--experiment-id {experiment.experiment_id}) or use another experiment name")
    return experiment
