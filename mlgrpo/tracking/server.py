"""A local `mlflow server` in its own process group: started, waited for, stopped as a whole.

`mlflow server` starts a uvicorn parent and worker processes; stopping only the first leaves the others
holding the port. We start it with start_new_session=True and signal the whole group. One worker is
enough for one person's UI, and it answers in about 10-20 s on a small machine instead of 50 s with
MLflow's default of 4 (../shared/research/stack.md); job execution, which starts more processes, is
turned off. Binds 127.0.0.1 unless told otherwise: the MLflow UI has no login.

Used by `mlgrpo ui` and by the tests' server fixture. Runs mlflow as a program; imports it only to
look an experiment up by name.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlgrpo.errors import UserError
from mlgrpo.tracking.uris import is_http, mask_uri, server_answers, sqlite_path

LOOPBACK = ("127.0.0.1", "localhost", "::1")
# MLflow's clients send these as HTTP basic credentials; the same pair on every node, and on the server.
USER_VAR, PASSWORD_VAR = "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"


def _socket(host: str) -> socket.socket:
    probe = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    # As uvicorn binds: connections of a just-stopped server in TIME_WAIT do not make the port busy.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return probe


def free_port(host: str = "127.0.0.1") -> int:
    with _socket(host) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def port_free(host: str, port: int) -> bool:
    with _socket(host) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
        return True


# MLflow's basic-auth app imports Flask-WTF, which only the `server` extra installs.
AUTH_INSTALL = "pip install -e '.[server]' (or pip install 'mlflow[auth]')"


class MlflowServer:
    """`mlflow server` for one backend store. port=0 picks a free port."""

    def __init__(self, backend_uri: str, *, host: str = "127.0.0.1", port: int = 0,
                 artifacts_destination: str | Path | None = None, log_path: str | Path | None = None,
                 credentials: tuple[str, str] | None = None):
        """credentials: (user, password) that every request must carry (MLflow's basic-auth app, its user
        store a SQLite file beside the log). Required to bind an address other machines reach."""
        if credentials is not None and importlib.util.find_spec("flask_wtf") is None:
            raise UserError(f"a tracking server with credentials needs MLflow's basic-auth app: {AUTH_INSTALL}")
        self.backend_uri, self.host = backend_uri, host
        self.credentials = credentials
        self.port = port or free_port(host)
        self.artifacts_destination = artifacts_destination
        if log_path is None:
            descriptor, log_path = tempfile.mkstemp(prefix="mlflow-server-", suffix=".log")
            os.close(descriptor)
        self.log_path = Path(log_path)
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '[::]') else host}:{self.port}"

    def command(self) -> list[str]:
        # The backend URI (a database password in it) goes in the environment (MLFLOW_BACKEND_STORE_URI,
        # _env): a command line is readable by every user of the machine (ps).
        command = [sys.executable, "-m", "mlflow", "server", "--host", self.host, "--port", str(self.port),
                   "--workers", "1"]
        if self.artifacts_destination is not None:  # clients upload and download through the server
            command += ["--serve-artifacts", "--artifacts-destination", str(self.artifacts_destination)]
        if self.credentials is not None:
            command += ["--app-name", "basic-auth"]
        return command

    def _auth_env(self) -> dict[str, str]:
        """The basic-auth app's settings: an ini naming the admin user (the password travels in the
        environment, never in the command line, a file or the log) and its user store."""
        if self.credentials is None:
            return {}
        user, password = self.credentials
        folder = Path(tempfile.mkdtemp(prefix="mlgrpo-auth-"))  # 0700
        ini = folder / "basic_auth.ini"
        ini.write_text(f"[mlflow]\ndefault_permission = READ\ndatabase_uri = sqlite:///{folder}/basic_auth.db\n"
                       f"admin_username = {user}\n"
                       "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n",
                       encoding="utf-8")
        # The key that signs the auth app's CSRF tokens: one server, so a fresh one per start unless given.
        key = os.environ.get("MLFLOW_FLASK_SERVER_SECRET_KEY") or secrets.token_hex(32)
        return {"MLFLOW_AUTH_CONFIG_PATH": str(ini), "MLFLOW_AUTH_ADMIN_PASSWORD": password,
                "MLFLOW_FLASK_SERVER_SECRET_KEY": key}

    def start(self) -> MlflowServer:
        if not port_free(self.host, self.port):
            raise UserError(f"port {self.port} on {self.host} is in use; pass another with --port (0: any free port)")
        if self.host not in LOOPBACK and self.credentials is None:
            raise UserError(f"binding {self.host} lets other machines reach the server, which must then ask for "
                            f"credentials: set {USER_VAR} and {PASSWORD_VAR} (the same on every node), or bind "
                            "127.0.0.1")
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_BACKEND_STORE_URI": self.backend_uri,
               **self._auth_env()}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        """Return once /health answers; UserError with the end of the server's log if it exits or stays silent."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise UserError(f"mlflow server exited ({self._log_tail()}); full log: {self.log_path}")
            if server_answers(self.url, timeout_s=1.0) is None:
                return
            time.sleep(0.25)
        raise UserError(f"mlflow server did not answer on {self.url} within {timeout_s:g} s; log: {self.log_path}")

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM to the whole process group, SIGKILL after timeout_s."""
        if self.process is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=timeout_s)
                _wait_group_gone(self.process.pid, timeout_s)
                break
            except subprocess.TimeoutExpired:
                continue
        self.process = None

    def _log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        return mask_uri(" | ".join(text[-lines:]))[:600]

    def __enter__(self) -> MlflowServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _wait_group_gone(pgid: int, timeout_s: float) -> None:
    """Uvicorn's workers leave shortly after their parent; wait for the group to empty."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise subprocess.TimeoutExpired(f"process group {pgid}", timeout_s)


def credentials_from_env() -> tuple[str, str] | None:
    """(user, password) from MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD, or None; UserError for half a pair."""
    user, password = os.environ.get(USER_VAR, ""), os.environ.get(PASSWORD_VAR, "")
    if bool(user) != bool(password):
        raise UserError(f"set both {USER_VAR} and {PASSWORD_VAR}, or neither")
    return (user, password) if user else None


def check_servable(uri: str) -> None:
    """`mlgrpo ui` serves a store on this machine; a remote server has its own UI."""
    if is_http(uri):
        raise UserError(f"{mask_uri(uri)} is a tracking server: open its own UI in a browser at that address "
                        f"(mlgrpo ui serves a local store, e.g. --tracking-uri sqlite:///mlflow.db)")
    db = sqlite_path(uri)
    if db is not None and not db.exists():
        raise UserError(f"no MLflow store at {db}: run an experiment first, or point --tracking-uri "
                        f"(or MLFLOW_TRACKING_URI) at the store the runs went to")


def experiment_id(uri: str, name: str) -> str:
    """The id of experiment `name` in the store; UserError listing the experiments there if absent."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(name)
    if experiment is None or experiment.lifecycle_stage == "deleted":
        names = sorted(e.name for e in client.search_experiments())
        raise UserError(f"no experiment {name!r} in {mask_uri(uri)}; it has: {', '.join(names) or 'none'}")
    return experiment.experiment_id
