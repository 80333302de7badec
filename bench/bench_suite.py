"""How long the test suite takes, as README.md tells people to run it: the fast tier and the whole suite.

    fast   python -m pytest -m "not slow" --cov=mlgrpo   (pytest-cov: which of mlgrpo's modules the fast tier runs)
    full   python -m pytest

Both run under pytest-xdist as pyproject.toml sets it (`-n auto --dist loadgroup`). Each is timed wall-clock from
this process; the fast tier's time includes coverage's own cost, so it is an upper bound on the plain tier.
Writes the section "suite" of reports/benchmarks.md and the same figures as one sentence in README.md's block
"suite", and prints them.
Every module of mlgrpo must be run by the fast tier: a module no fast test executes beyond its imports is listed.

    python -m bench.bench_suite [--fast-only]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
COMMAND = "python -m bench.bench_suite"
GOALS = {"fast": 180.0, "full": 900.0}  # issue 25: <= 3 and <= 15 minutes on 2 cores


def run(args: list[str], env: dict | None = None) -> tuple[float, str, int]:
    """(wall seconds, pytest's summary line, exit code) of `python -m pytest *args` in the repository."""
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"], cwd=ROOT,
                         capture_output=True, text=True, env={**os.environ, **(env or {})})
    seconds = time.monotonic() - started
    lines = [line.strip("= ") for line in out.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return seconds, (lines[-1] if lines else f"no summary (exit code {out.returncode})"), out.returncode


def uncovered(report: Path) -> list[str]:
    """mlgrpo's modules in which the fast tier ran no line beyond what importing them runs (definitions)."""
    data = json.loads(report.read_text(encoding="utf-8"))
    missing = []
    for name, entry in sorted(data["files"].items()):
        functions = entry.get("functions", {})
        bodies = [f for key, f in functions.items() if key]  # "" is the module's top level
        if bodies and not any(f["summary"]["covered_lines"] for f in bodies):
            missing.append(str(Path(name).relative_to(ROOT)) if Path(name).is_absolute() else name)
    return missing


def previous_rows() -> list[list[str]]:
    """The rows of the table in reports/benchmarks.md's section "suite" (empty when there is none)."""
    from bench._report import REPORT

    text = REPORT.read_text(encoding="utf-8") if REPORT.exists() else ""
    section = text.split("<!-- begin:suite -->", 1)[-1].split("<!-- end:suite -->", 1)[0] if "<!-- begin:suite -->" in text else ""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| tier")]
    return [row + [""] * (6 - len(row)) for row in rows]


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"


def readme_line(rows: list[list], missing: list[str], readme: Path = README) -> None:
    """README.md's block "suite": the same figures in one sentence."""
    from datetime import date

    from bench._report import machine

    figures = "; ".join(f"{row[0]} {row[2]} (goal {row[3]}): {row[4]}" + (f", {row[5]}" if row[5] else "")
                        for row in rows)
    coverage = "every mlgrpo module runs in the fast tier" if not missing else f"{len(missing)} modules not run fast"
    text = readme.read_text(encoding="utf-8")
    begin, end = "<!-- begin:suite -->", "<!-- end:suite -->"
    block = (f"{begin}\nMeasured by `{COMMAND}` ({date.today().isoformat()}, {machine()}): {figures}; {coverage} "
             f"(reports/benchmarks.md).\n{end}")
    head, rest = text.split(begin, 1)
    readme.write_text(head + block + rest.split(end, 1)[1], encoding="utf-8")


def main(fast_only: bool) -> int:
    from importlib.metadata import version

    from bench._report import markdown_table, write_section

    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "coverage.json"
        fast = run(["-m", "not slow", "--cov=mlgrpo", "--cov-report", f"json:{report}"])
        missing = uncovered(report) if report.exists() else ["(coverage wrote no report)"]
    now = time.strftime("%Y-%m-%d %H:%M")
    rows = [["fast tier", 'python -m pytest -m "not slow"', minutes(fast[0]), minutes(GOALS["fast"]), fast[1], now]]
    if not fast_only:
        full = run([])
        rows.append(["whole suite", "python -m pytest", minutes(full[0]), minutes(GOALS["full"]), full[1],
                     time.strftime("%Y-%m-%d %H:%M")])
    else:  # the whole suite's row of the last full run, with its own date
        rows += [row for row in previous_rows() if row[0] == "whole suite"]
    body = "\n\n".join([
        markdown_table(["tier", "command", "wall time", "goal", "result", "measured (UTC)"], rows),
        f"Under pytest {version('pytest')} and pytest-xdist {version('pytest-xdist')} with {os.cpu_count()} workers "
        "(`-n auto --dist loadgroup`: each file's tests, and those sharing a costly session fixture, on one worker; "
        "tests/conftest.py); the fast tier timed with coverage on. "
        + ("Every mlgrpo module is run by the fast tier." if not missing else
           "Modules the fast tier runs no function of: " + ", ".join(f"`{m}`" for m in missing) + "."),
    ])
    write_section("suite", "Test suite: the fast tier and the whole suite", body, COMMAND)
    readme_line(rows, missing)
    print(body)
    return 0 if all(row[-1] and " failed" not in row[-1] for row in rows) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast-only", action="store_true", help="time the fast tier only")
    sys.exit(main(parser.parse_args().fast_only))
