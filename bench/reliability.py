"""reports/reliability.md: faults injected and survived, bad inputs tried and refused, rows lost, load held.

    python -m bench.reliability            # the fault, bad-input and security tests, then the load benchmark
    python -m bench.reliability --no-load  # without the load benchmark (its last figures are kept)
    python -m bench.reliability --no-quickstart  # without the full quickstart in 4 workers (~5 min)

Runs the tests below with MLGRPO_RELIABILITY_LOG set: each records what it tried through the `reliability`
fixture (tests/conftest.py), and its own asserts decide whether it held: every test's result is logged
beside the records, a failed test's records are counted as failed whatever outcome they were written with,
and a test that failed before recording anything gets a row of its own. The figures never claim more than
the tests showed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "reports" / "reliability.md"
TESTS = [
    "tests/experiments/test_runner_faults.py", "tests/tracking/test_outage.py", "tests/tracking/test_concurrency.py",
    "tests/trainers/test_guard.py", "tests/trainers/test_resume.py", "tests/rewards/test_guard.py",
    "tests/experiments/test_mutations.py", "tests/experiments/test_source.py", "tests/data/test_fuzz.py",
    "tests/test_cli_sweep.py", "tests/tracking/test_params.py", "tests/tracking/test_ui.py",
    "tests/reports/test_build.py", "tests/reports/test_hostile_run.py", "tests/reports/test_render.py",
    "tests/experiments/test_runner.py::test_quickstart_with_four_workers_on_one_sqlite_store",
]
CATEGORIES = ("fault", "bad input: experiment file", "bad input: data file", "bad input: CLI", "security", "load")
UNRECORDED = "failed before recording"  # a failed test that recorded nothing: counted, never silent


def run_tests(log: Path, tests: list[str] | None = None, options: tuple[str, ...] = ()) -> tuple[int, str, float]:
    present = [t for t in (TESTS if tests is None else tests) if (ROOT / t.split("::")[0]).exists()]
    env = {**os.environ, "MLGRPO_RELIABILITY_LOG": str(log), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    started = time.perf_counter()
    # No extra -q: pyproject's addopts has one already, and a second hides pytest's summary line.
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:warnings", "-rf",
                             *options, *present], cwd=ROOT, env=env, capture_output=True, text=True)
    lines = result.stdout.splitlines()
    summary = next((line.strip("= ") for line in reversed(lines) if " passed" in line or " failed" in line),
                   f"pytest exit code {result.returncode}")
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    return result.returncode, summary + ("\n" + "\n".join(failed) if failed else ""), time.perf_counter() - started


def read_log(log: Path) -> list[dict]:
    """The records of the run, each failed test's records marked failed, and one record per test that
    failed without recording anything (category "failed before recording")."""
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    failed = {line["test"] for line in lines if "result" in line and line["result"] == "failed"}
    records = [line for line in lines if "result" not in line]
    for record in records:
        if record["test"] in failed:
            record["outcome"] = "failed"
    recorded = {record["test"] for record in records}
    for test in sorted(failed - recorded):
        records.append({"test": test, "category": UNRECORDED, "what": "failed before recording what it tried",
                        "outcome": "failed", "tried": 0, "refused": 0, "rows_in": 0, "rows_lost": 0})
    return records


def table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def render(records: list[dict], summary: str, seconds: float, load_section: str) -> str:
    by_category: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        by_category[record["category"]].append(record)
    totals = []
    for category in (*CATEGORIES, UNRECORDED):
        rows = by_category.get(category, [])
        if (category == "load" or category == UNRECORDED) and not rows:
            continue  # load: measured by the load benchmark, its figures are under "Load" below
        totals.append([category, len(rows), sum(r["tried"] for r in rows),
                       sum(r["refused"] for r in rows) if category.startswith("bad input") else "",
                       sum(r["rows_in"] for r in rows) or "", sum(r["rows_lost"] for r in rows),
                       sum(r["outcome"] == "failed" for r in rows)])
    parts = [
        "# Reliability\n",
        f"Regenerated by `python -m bench.reliability` on {date.today().isoformat()} ({os.cpu_count()} cores). "
        f"Tests run: {summary.splitlines()[0]} in {seconds:.0f} s.",
        "Each line is recorded by a test that asserts it (tests/conftest.py `reliability`); the test's own result "
        "decides its outcome: a failed test's lines are counted as failed, and a test that failed before recording "
        "anything has a line of its own.\n",
        "## Totals\n",
        table(["category", "checks", "inputs or faults tried", "refused cleanly", "rows in", "rows lost", "failed"],
              totals),
    ]
    if "\n" in summary:
        parts.append("\nFailed tests:\n\n```\n" + summary.split("\n", 1)[1] + "\n```")
    for category in (*CATEGORIES, UNRECORDED):
        rows = by_category.get(category, [])
        if not rows:
            continue
        extra = sorted({k for r in rows for k in r} - {"test", "category", "what", "outcome", "tried", "refused",
                                                        "rows_in", "rows_lost"})
        parts.append(f"\n## {category[0].upper() + category[1:]}\n")
        parts.append(table(["what", "outcome", "tried", "refused", "rows in", "rows lost", *extra, "test"],
                           [[r["what"], r["outcome"], r["tried"], r["refused"], r["rows_in"], r["rows_lost"],
                             *[_short(r.get(k, "")) for k in extra], f"`{r['test']}`"] for r in rows]))
    parts.append("\n## Load\n")
    parts.append(load_section or "Not measured in this run (`python -m bench.bench_load` writes it to "
                 "reports/benchmarks.md).")
    return "\n".join(parts) + "\n"


def _short(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def load_figures() -> str:
    """The load benchmark's section of reports/benchmarks.md, as last written."""
    text = (ROOT / "reports" / "benchmarks.md").read_text(encoding="utf-8")
    begin, end = "<!-- begin:load -->", "<!-- end:load -->"
    if begin not in text:
        return ""
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def full_quickstart(log: Path, workers: int = 4) -> bool:
    """experiments/quickstart.yaml at full length in `workers` processes on one new SQLite store, then the
    store read back: every run FINISHED once, no metric step twice, no "database is locked" anywhere."""
    from mlflow import MlflowClient

    with tempfile.TemporaryDirectory(prefix="reliability-quickstart-") as folder:
        work = Path(folder)
        (work / "quickstart.yaml").write_text((ROOT / "experiments" / "quickstart.yaml").read_text(encoding="utf-8"),
                                              encoding="utf-8")
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "quickstart.yaml", "--workers",
                                 str(workers)], cwd=work, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        logs = [result.stdout, result.stderr] + [p.read_text(encoding="utf-8", errors="replace")
                                                for p in work.glob("runs/quickstart/*/worker.log")]
        client = MlflowClient(f"sqlite:///{work}/mlflow.db")
        experiment = client.get_experiment_by_name("quickstart")
        runs = client.search_runs([experiment.experiment_id]) if experiment else []
        children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
        points = twice = 0
        for run in children:
            for key in run.data.metrics:
                steps = [m.step for m in client.get_metric_history(run.info.run_id, key)]
                points, twice = points + len(steps), twice + len(steps) - len(set(steps))
    finished = sum(r.info.status == "FINISHED" for r in children)
    locked = sum(text.lower().count("database is locked") for text in logs)
    held = result.returncode == 0 and finished == len(children) == 6 and twice == 0 and locked == 0
    record = {"test": "bench/reliability.py full_quickstart", "category": "fault", "tried": 1, "refused": 0,
              "rows_in": 0, "rows_lost": 0, "outcome": "survived" if held else "failed",
              "what": f"experiments/quickstart.yaml at full length, {workers} worker processes on one new sqlite store "
                      f"({seconds:.0f} s): {finished} of {len(children)} runs FINISHED, {points:,} metric points, "
                      f"{twice} logged twice, 'database is locked' {locked} times"}
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    print(record["what"], file=sys.stderr)
    return held


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-load", action="store_true", help="skip the load benchmark (keep its last figures)")
    parser.add_argument("--no-quickstart", action="store_true", help="skip the full quickstart in 4 worker processes")
    args = parser.parse_args(argv)
    if not args.no_load:
        subprocess.run([sys.executable, "-m", "bench.bench_load"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "records.jsonl"
        code, summary, seconds = run_tests(log)
        if not args.no_quickstart and not full_quickstart(log):
            code = code or 1
        records = read_log(log)
    REPORT.write_text(render(records, summary, seconds, load_figures()), encoding="utf-8")
    print(REPORT.read_text(encoding="utf-8"))
    print(f"wrote {REPORT}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
