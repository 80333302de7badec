"""Test-wide settings (one torch thread: the CI machine has 2 cores; no hub access), a real MLflow server, and
how pytest-xdist shares the suite out.

Starting `mlflow server` takes 10-20 s on a loaded 2-core machine, so one server serves the whole session;
the tracking outage test stops and restarts it on the same port and store.

The suite runs under pytest-xdist (`-n auto --dist loadgroup`, pyproject.toml): each test file goes to one
worker whole (its module fixtures are made once), and the tests that share a costly session fixture
(the MLflow server, the shortened quickstart's store) go to one worker together, so each is made once.
`python -m pytest -n 0` runs in one process.
"""

from __future__ import annotations

import os

# Before anything imports torch or the HF libraries.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


import shutil  # noqa: E402
import tempfile  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from mlgrpo.tracking.server import MlflowServer  # noqa: E402


@dataclass
class LiveServer:
    server: MlflowServer
    folder: Path

    @property
    def uri(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.server.stop()

    def start(self) -> None:
        self.server.start()
        self.server.wait_ready(timeout_s=120)


_STARTED: list[LiveServer] = []


def _launch() -> LiveServer:
    folder = Path(tempfile.mkdtemp(prefix="mlgrpo-test-server-"))
    server = MlflowServer(f"sqlite:///{folder}/mlflow.db", host="127.0.0.1",
                          artifacts_destination=folder / "artifacts", log_path=folder / "server.log")
    _STARTED.append(LiveServer(server.start(), folder))
    return _STARTED[-1]


# ---- the tests that skipped, for CI's second pass ------------------------------------------------------------
# `python -m pytest` records in pytest's cache the tests (and modules) that skipped; after .ci/run installs what
# only enables them (Chromium, PostgreSQL, the gsm package on 3.11), `python -m pytest --skipped-last` runs those
# alone, so CI proves both the README's bare path and the full one without running the suite twice.
SKIPPED_KEY = "mlgrpo/skipped"
_SKIPPED: set[str] = set()


# Session fixtures that cost a server start or a whole run: the tests that use one are sent to the same xdist
# worker, which makes it once.
SHARED_FIXTURES = ("quickstart_store", "mlflow_server")


class _WorkerGroups:
    """Each test's xdist group: the shared fixture it uses, else its file."""

    @pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups (--dist loadgroup)
    def pytest_collection_modifyitems(self, session, config, items):
        for item in items:
            shared = next((name for name in SHARED_FIXTURES if name in item.fixturenames), None)
            item.add_marker(pytest.mark.xdist_group(shared or item.nodeid.split("::")[0]))


def pytest_configure(config):
    config.pluginmanager.register(_WorkerGroups(), "mlgrpo-worker-groups")
    if config.getoption("--skipped-last") and _recorded_skips(config) is None and not hasattr(config, "workerinput"):
        raise pytest.UsageError("--skipped-last: no run has recorded its skipped tests here yet; run python -m pytest")


def _node(nodeid: str) -> str:
    """A test's id without the "@group" suffix pytest-xdist adds under --dist loadgroup."""
    return nodeid.split("@")[0]


def pytest_addoption(parser):
    parser.addoption("--skipped-last", action="store_true",
                     help="run only the tests that skipped in the last run (recorded in .pytest_cache)")


def pytest_collectreport(report):
    if report.skipped:  # a whole module skipped at import (pytest.importorskip at its top)
        _SKIPPED.add(_node(report.nodeid))


def pytest_runtest_logreport(report) -> None:
    """Records a skipped test for --skipped-last; with MLGRPO_RELIABILITY_LOG set, every test's result, so
    that bench/reliability.py marks what a failed test recorded as failed (a record is often written before
    the asserts that decide it) and lists a test that failed before recording anything."""
    import json

    if report.skipped and not hasattr(report, "wasxfail"):
        _SKIPPED.add(_node(report.nodeid))
    log = os.environ.get("MLGRPO_RELIABILITY_LOG")
    if log and (report.when == "call" or report.failed):
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"result": report.outcome, "test": report.nodeid, "when": report.when}) + "\n")


def _recorded_skips(config) -> list[str] | None:
    return config.cache.get(SKIPPED_KEY, None) if getattr(config, "cache", None) is not None else None


def _skipped_last(config, items) -> None:
    recorded = _recorded_skips(config) or []
    keep = [item for item in items
            if any(_node(item.nodeid) == node or _node(item.nodeid).startswith(node + "::") for node in recorded)]
    config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    items[:] = keep


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_modifyitems(session, config, items):
    if config.getoption("--skipped-last"):
        _skipped_last(config, items)
    # Started while the first tests run. An xdist worker collects every test but runs only its share: there
    # the fixture starts the server when a test of this worker first needs it.
    if not _STARTED and not hasattr(config, "workerinput") and any("mlflow_server" in item.fixturenames
                                                                    for item in items):
        _launch()


def pytest_sessionfinish(session, exitstatus):
    # A partial run (-k, a file, -x) records its own skips only; the full first pass is the one CI reads.
    cache = getattr(session.config, "cache", None)  # None under -p no:cacheprovider
    if cache is not None and not hasattr(session.config, "workerinput"):  # pytest-xdist: the controller sees all
        cache.set(SKIPPED_KEY, sorted(_SKIPPED))
    while _STARTED:
        live = _STARTED.pop()
        live.stop()
        shutil.rmtree(live.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def mlflow_server() -> LiveServer:
    live = _STARTED[-1] if _STARTED else _launch()
    live.server.wait_ready(timeout_s=120)
    return live


class Reliability:
    """What a fault or bad-input test tried and how it ended, for reports/reliability.md.

    `python -m bench.reliability` runs the suite with MLGRPO_RELIABILITY_LOG set and tabulates these
    records; without it, `record` only checks its arguments. The tests' own asserts decide pass/fail: every
    test's result is logged too (pytest_runtest_logreport), and a failed test's records count as failed.
    """

    CATEGORIES = ("fault", "bad input: experiment file", "bad input: data file", "bad input: CLI", "security",
                  "load")

    def __init__(self, test: str) -> None:
        self.test = test

    def record(self, category: str, what: str, outcome: str, *, tried: int = 1, refused: int = 0,
               rows_in: int = 0, rows_lost: int = 0, **figures) -> None:
        """outcome: "survived" (fault), "refused" (bad input), "passed" (security, load) or "failed"."""
        import json

        if category not in self.CATEGORIES:
            raise ValueError(f"unknown reliability category {category!r}; use one of {self.CATEGORIES}")
        log = os.environ.get("MLGRPO_RELIABILITY_LOG")
        if not log:
            return
        entry = {"test": self.test, "category": category, "what": what, "outcome": outcome, "tried": tried,
                 "refused": refused, "rows_in": rows_in, "rows_lost": rows_lost, **figures}
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")


@pytest.fixture
def reliability(request) -> Reliability:
    return Reliability(request.node.nodeid)


# ---- one shortened quickstart for the tests that need a real store of it ------------------------------------

QUICKSTART = Path(__file__).parents[1] / "experiments" / "quickstart.yaml"


@dataclass
class QuickstartRun:
    folder: Path
    result: "subprocess.CompletedProcess"

    @property
    def uri(self) -> str:
        return f"sqlite:///{self.folder}/mlflow.db"


def shortened_quickstart(folder: Path) -> Path:
    """The shipped quickstart, everything but its shape made tiny: 6 languages, 3 arms, 2 seeds, 8 steps, 4
    worker processes on one new SQLite store, logging every step."""
    import yaml

    config = yaml.safe_load(QUICKSTART.read_text(encoding="utf-8"))
    config["model"]["policy"] = ("tiny:hidden_size=32,num_heads=2,num_layers=1,intermediate_size=64,max_steps=10,"
                                 "check_every=5,target_exact_match=0.0,train_per_language=40,eval_per_language=4,"
                                 "final_eval_per_language=4,languages=en+es+ru+ar+ja+sw")
    config["data"]["per_language"] = {lang: 40 for lang in ("en", "es", "ru", "ar", "ja")} | {"sw": 8}
    config["training"].update(num_generations=4, per_device_train_batch_size=8, max_completion_length=8, max_steps=8,
                              logging_steps=1)
    config["evaluation"].update(every_steps=4, per_language=4, max_new_tokens=8)
    config["run"].update(workers=4, checkpoint_every=4)
    path = folder / "quickstart.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def quickstart_store(tmp_path_factory) -> QuickstartRun:
    """`mlgrpo run` of the shortened quickstart, once per session: the runner's four-worker test checks the run,
    the views test opens its store in a browser."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("quickstart-store")
    shortened_quickstart(folder)
    result = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "quickstart.yaml"], cwd=folder,
                            capture_output=True, text=True, timeout=900, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return QuickstartRun(folder, result)
