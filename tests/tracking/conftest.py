"""A shared local SQLite store, quick flush settings and the worker script for the tracking tests.

The real `mlflow server` these tests also use is the session fixture `mlflow_server` of tests/conftest.py
(one server for the whole test session; the outage test stops and restarts it on the same port and store).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from mlgrpo.tracking import FlushPolicy

# `mlgrpo` as a child process that Ctrl-C (SIGINT) stops as it does in a terminal, even when the test run
# itself was started in the background: a shell starts `cmd &` with SIGINT ignored, children inherit that,
# and Python then installs no KeyboardInterrupt handler (a CI run started so saw `mlgrpo ui` never stop).
CLI = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
       "from mlgrpo.cli import main; sys.exit(main(sys.argv[1:]))"]

# Short pauses so that outage and finish paths run in seconds, not minutes.
QUICK = FlushPolicy(interval_s=0.2, max_backoff_s=1.0, finish_timeout_s=3.0, setup_timeout_s=20.0)
WRITER = Path(__file__).with_name("writer.py")


@pytest.fixture(scope="session")
def sqlite_uri(tmp_path_factory) -> str:
    """One local store for the tests that need no server (each uses its own experiment)."""
    return f"sqlite:///{tmp_path_factory.mktemp('sqlite-store')}/mlflow.db"


@pytest.fixture
def experiment_name(request) -> str:
    return re.sub(r"[^\w.-]", "_", request.node.name)
