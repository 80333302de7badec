"""A tracking server other machines reach asks for credentials, and none is logged or shown on a command line.
Everything here binds 127.0.0.1 or is refused before binding anything."""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from mlgrpo.errors import UserError
from mlgrpo.tracking.server import AUTH_INSTALL, MlflowServer


def test_binding_an_address_other_machines_reach_needs_credentials(tmp_path):
    server = MlflowServer(f"sqlite:///{tmp_path}/mlflow.db", host="0.0.0.0", port=1)
    with pytest.raises(UserError, match="must then ask for credentials: set MLFLOW_TRACKING_USERNAME and "):
        server.start()
    assert server.process is None
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING_")}
    result = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "server", "--backend-store-uri",
                             f"sqlite:///{tmp_path}/mlflow.db", "--artifacts-destination", str(tmp_path / "a"),
                             "--host", "0.0.0.0", "--port", "1"], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "must then ask for credentials" in result.stderr


def _status(url: str, auth: str | None = None) -> int:
    request = urllib.request.Request(f"{url}/api/2.0/mlflow/experiments/search?max_results=5")
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow
def test_a_server_with_credentials_refuses_anonymous_requests_and_keeps_the_password_out_of_sight(tmp_path,
                                                                                                  monkeypatch):
    pytest.importorskip("flask_wtf", reason=f"MLflow's basic-auth app is not installed: {AUTH_INSTALL}")
    password = secrets.token_urlsafe(12)
    server = MlflowServer(f"sqlite:///{tmp_path}/mlflow.db", artifacts_destination=tmp_path / "artifacts",
                          log_path=tmp_path / "server.log", credentials=("mlgrpo", password))
    with server:
        server.wait_ready(timeout_s=180)
        assert _status(server.url) == 401
        assert _status(server.url, f"mlgrpo:{password}x") == 401
        assert _status(server.url, f"mlgrpo:{password}") == 200
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "mlgrpo")
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", password)
        from mlgrpo.tracking import Tracker

        tracker = Tracker.open(server.url, "auth-check", outbox_dir=tmp_path / "outbox")
        parent = tracker.start_parent("p", {})
        parent.log_metrics({"train/reward/en": 1.0}, step=1)
        parent.finish()
        group = os.getpgid(server.process.pid)
        command_lines = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in os.listdir("/proc") if pid.isdigit()
                         and _in_group(int(pid), group)]
        assert command_lines and not any(password.encode() in line for line in command_lines)
    assert password not in (tmp_path / "server.log").read_text(encoding="utf-8", errors="replace")


def _in_group(pid: int, group: int) -> bool:
    try:
        return os.getpgid(pid) == group
    except OSError:
        return False


@pytest.mark.slow
def test_mlgrpo_server_prints_what_every_node_exports_and_stops_on_ctrl_c(tmp_path):
    import signal

    from .conftest import CLI

    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    process = subprocess.Popen([*CLI, "server", "--backend-store-uri", f"sqlite:///{tmp_path}/mlflow.db",
                                "--artifacts-destination", str(tmp_path / "artifacts"), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = process.stdout.readline()
        second = process.stdout.readline()
        assert first.startswith(f"tracking server for sqlite:///{tmp_path}/mlflow.db, artifacts in "), first
        assert second.startswith("on every node: export MLFLOW_TRACKING_URI=http://127.0.0.1:"), second
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0 and "stopping the tracking server" in err
