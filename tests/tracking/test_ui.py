"""`mlgrpo ui`: serves a local store on 127.0.0.1, prints the experiment's URL, stops on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request

import pytest

from mlgrpo import cli
from mlgrpo.tracking import Tracker
from mlgrpo.tracking.server import port_free

from .conftest import CLI, QUICK

# What the `mlgrpo` console script runs (mlgrpo.cli:main), without needing the script on PATH.


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp writes them) with a socket listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            for line in handle.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.split(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.append(address)
    return found


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def test_ui_is_a_registered_command():
    assert "ui" in cli.COMMAND_MODULES, "add \"ui\" to COMMAND_MODULES in mlgrpo/cli.py"


def test_ui_refuses_a_remote_server(capsys):
    assert cli.main(["ui", "--tracking-uri", "https://bob:pw@mlflow.example.com"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its own UI" in err and "pw" not in err


def test_ui_refuses_a_missing_store(capsys, tmp_path):
    assert cli.main(["ui", "--tracking-uri", f"sqlite:///{tmp_path}/none.db"]) == 2
    assert "no MLflow store" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


@pytest.mark.slow
def test_ui_binds_loopback_prints_the_url_and_stops_on_ctrl_c(sqlite_uri, tmp_path, reliability):
    tracker = Tracker.open(sqlite_uri, "ui-demo", policy=QUICK, outbox_dir=tmp_path)
    ui = subprocess.Popen([*CLI, "ui", "--tracking-uri", sqlite_uri, "--port", "0",
                           "--experiment", "ui-demo"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True)
    try:
        line = ui.stdout.readline()  # blocks until the server answers (or the command fails)
        assert line.startswith("MLflow UI: http://127.0.0.1:"), line + ui.stderr.read()
        url = line.split()[2]
        base, fragment = url.split("/#/")
        # no runs yet, so no views: the runs page (3.17's plain experiment link opens the GenAI traces page)
        assert fragment == f"experiments/{tracker.experiment_id}/runs?workflowType=machine_learning"
        port = int(base.rsplit(":", 1)[1])
        assert _listening(port) == ["0100007F"]  # 127.0.0.1 only, no 0.0.0.0 or IPv6 socket
        with urllib.request.urlopen(base, timeout=30) as page:
            assert page.status == 200
        query = f"{base}/api/2.0/mlflow/experiments/get?experiment_id={tracker.experiment_id}"
        with urllib.request.urlopen(query, timeout=30) as answer:
            assert json.load(answer)["experiment"]["name"] == "ui-demo"
        reliability.record("security", "mlgrpo ui serves on 127.0.0.1 only", "passed")
        (server,) = _children(ui.pid)  # `mlflow server`, leader of its own process group
        assert os.getpgid(server) == server != os.getpgid(ui.pid)
        os.kill(ui.pid, signal.SIGINT)  # what Ctrl-C sends to the foreground process
        assert ui.wait(timeout=150) == 0  # stop(): SIGTERM, then SIGKILL, 2 x (15 + 15) s at most, on a busy machine
        deadline = time.monotonic() + 20
        while not port_free("127.0.0.1", port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert port_free("127.0.0.1", port) and _listening(port) == []
        with pytest.raises(ProcessLookupError):  # the server and its uvicorn workers are gone
            os.killpg(server, 0)
    finally:
        if ui.poll() is None:
            os.killpg(ui.pid, signal.SIGKILL)
