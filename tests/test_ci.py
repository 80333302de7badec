"""CI (.ci/run): the README's two set-up commands first, exactly as written; then a second pass
(`python -m pytest --skipped-last`) of the tests that skipped, and only those, once what they need is installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = '''
import os, pytest
pytest.importorskip("a_package_nobody_ships", reason="not installed")
'''
TESTS = '''
import os, pytest
NEEDS = pytest.mark.skipif(not os.environ.get("ENABLED"), reason="needs ENABLED: export ENABLED=1")
def test_always(): pass
@NEEDS
def test_needs_it(): assert os.environ["ENABLED"] == "1"
@pytest.mark.xfail(reason="an expected failure is not a skip")
def test_expected_failure(): assert False
'''


def _pytest(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", *args], cwd=folder,
                          capture_output=True, text=True, timeout=300, env={**_environ(), **env})


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "ENABLED"}


@pytest.mark.slow
@pytest.mark.parametrize("workers", [("-p", "no:xdist"), ("-n", "2", "--dist", "loadgroup")], ids=["one-process", "xdist"])
def test_the_second_pass_runs_exactly_what_skipped(tmp_path, workers):
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_mixed.py").write_text(TESTS, encoding="utf-8")
    (tmp_path / "test_module_skipped.py").write_text(SUITE, encoding="utf-8")

    nothing_yet = _pytest(tmp_path, "--skipped-last", *workers)
    assert nothing_yet.returncode == 4 and "no run has recorded its skipped tests" in nothing_yet.stderr

    first = _pytest(tmp_path, *workers)
    assert first.returncode == 0 and "1 passed, 2 skipped, 1 xfailed" in first.stdout, first.stdout

    second = _pytest(tmp_path, "--skipped-last", *workers, ENABLED="1")
    assert second.returncode == 0, second.stdout
    # The module skips again; xdist's workers deselect on their side, so its summary leaves the count out.
    expected = "1 passed, 1 skipped in" if "-n" in workers else "1 passed, 1 skipped, 2 deselected"
    assert expected in second.stdout, second.stdout


GROUPED = '''
import os, pytest
@pytest.mark.parametrize("i", range(6))
def test_where(i, request):
    with open(os.environ["WHERE"], "a") as handle:
        handle.write(f"{os.environ['PYTEST_XDIST_WORKER']} {request.node.nodeid}\\n")
'''


def test_under_xdist_a_files_tests_run_on_one_worker(tmp_path):
    """tests/conftest.py's groups reach pytest-xdist (each file's tests, and those sharing a costly session
    fixture, on one worker, which makes its fixtures once). pytest 9.2 gives items structured ids, on which
    pytest-xdist 3.8's --dist loadgroup silently stops grouping (pytest-xdist#1386): pyproject.toml pins below it."""
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    for name in ("test_a.py", "test_b.py"):
        (tmp_path / name).write_text(GROUPED, encoding="utf-8")
    out = _pytest(tmp_path, "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider", WHERE=str(tmp_path / "where"))
    assert out.returncode == 0 and "12 passed" in out.stdout, out.stdout + out.stderr
    ran = [line.split(" ", 1) for line in (tmp_path / "where").read_text(encoding="utf-8").splitlines()]
    assert all(nodeid.endswith(f"@{nodeid.split('::')[0]}") for _, nodeid in ran), ran  # the group, as xdist sees it
    workers = {name: {worker for worker, nodeid in ran if nodeid.startswith(name)}
               for name in ("test_a.py", "test_b.py")}
    assert all(len(found) == 1 for found in workers.values()), workers


ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readmes_two_commands_first_exactly_as_written():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    first_block = setup.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in first_block.splitlines() if line.strip()]
    assert commands == ['pip install -e ".[dev]"', "python -m pytest"]
    assert setup.count("```bash") == 1, "the set-up section has exactly two commands, in one block"
    steps = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.lstrip().startswith(("#", "echo"))]
    # Nothing but the virtual environment and pip itself before them; nothing between them.
    at = steps.index(commands[0])
    assert steps[at + 1] == commands[1]
    assert all("install" not in step or "pip>=24" in step for step in steps[:at]), steps[:at]
