"""Benchmark: what logging every step to MLflow costs a training step, to a local SQLite store and to a server.

Each step logs 16 metrics x 5 languages = 80 per-language values (names and macro / worst aggregates
made by tracked_metrics: 102 keys in all), as a trainer callback does. The "training step" is fixed
CPU work (~--step-ms long) so that the cost of logging shows as extra step time; two kinds of work:
torch matrix products (the GIL is released, as in a step's kernels) and pure Python (the GIL is held,
as in a generation loop), since mlgrpo sends from a background thread that needs the GIL.
Contenders, timed in turns of --turn steps, round after round, so that load from other processes
falls on all of them alike:

- no logging (the baseline);
- RunHandle.log_metrics (mlgrpo: buffered, sent by a background thread every interval_s) to SQLite,
  and to an `mlflow server` on 127.0.0.1 (started here, its own SQLite store);
- MlflowClient.log_batch on every step (what a callback without buffering does), same two stores.

Reported per contender: median and mean step time and the overhead against the baseline (same rounds),
the time inside the logging call on the training thread, and the CPU milliseconds a step of logging
costs this process and the server (to compare with your own step length).

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_tracking [--steps 200] [--step-ms 100]
        [--work torch,python] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from bench._report import markdown_table, write_section
from mlgrpo.tracking import FlushPolicy, Tracker, tracked_metrics
from mlgrpo.tracking.server import MlflowServer

LANGUAGES = ("en", "es", "ru", "ar", "ja")
METRICS = ("reward", "reward_std", "rewards/exact_match", "rewards/exact_match_std", "rewards/chrf",
           "rewards/format", "completion_length", "completion_length_std", "language_consistency",
           "language_consistency_std", "samples", "sampler/drawn", "adv/mean", "adv/std", "kl", "entropy")


def step_logs(step: int) -> dict[str, float]:
    return {f"{m}/{lang}": (step * 31 + i * 7 + j) % 97 / 97
            for i, m in enumerate(METRICS) for j, lang in enumerate(LANGUAGES)}


def torch_work(units: int, a: torch.Tensor) -> None:
    """Matrix products: torch releases the GIL inside each, as in a training step's kernels."""
    for _ in range(units):
        a @ a


def python_work(units: int, a: torch.Tensor) -> None:
    """Pure Python, holding the GIL throughout, as in a generation loop's per-token Python code."""
    for _ in range(units):
        sum(i * i for i in range(2000))


WORK = {"torch": torch_work, "python": python_work}


def calibrate(work, step_ms: float, a: torch.Tensor) -> int:
    """Work units per step for ~step_ms on this machine now (after a warm-up: the first products are slow)."""
    work(50, a)
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        work(50, a)
        timings.append((time.perf_counter() - start) / 50)
    return max(1, round(step_ms / 1000 / statistics.median(timings)))


def group_cpu_s(pgid: int | None) -> float:
    """CPU seconds (user + system) used so far by the live processes of a process group (Linux /proc)."""
    if pgid is None:
        return 0.0
    total = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


class Contender:
    """One way of logging, timed over its turns. A buffered contender flushes (waits for its sends) at
    the end of each turn, so that none of its background sends land in another contender's turn; the
    wait is reported apart. CPU is counted over whole turns: this process (both threads) and the server."""

    def __init__(self, name: str, log, flush=None, server_pgid: int | None = None):
        self.name, self.log, self.flush, self.server_pgid = name, log, flush, server_pgid
        self.step_s: list[float] = []
        self.log_s: list[float] = []
        self.flush_s = self.cpu_s = self.server_cpu_s = 0.0
        self.step = 0

    def run(self, steps: int, work, units: int, a: torch.Tensor) -> None:
        cpu, server_cpu = time.process_time(), group_cpu_s(self.server_pgid)
        for _ in range(steps):
            start = time.perf_counter()
            work(units, a)
            logged = time.perf_counter()
            if self.log is not None:
                self.log(tracked_metrics(step_logs(self.step), LANGUAGES), self.step)
            end = time.perf_counter()
            self.step_s.append(end - start)
            self.log_s.append(end - logged)
            self.step += 1
        if self.flush is not None:
            start = time.perf_counter()
            assert self.flush(timeout_s=300), "the store did not take every metric"
            self.flush_s += time.perf_counter() - start
        self.cpu_s += time.process_time() - cpu
        self.server_cpu_s += group_cpu_s(self.server_pgid) - server_cpu


def buffered(tracker: Tracker, name: str):
    return tracker.child_run(tracker.start_parent(name), {"bench": name}, name)[0]


def direct(tracker: Tracker, name: str):
    from mlflow.entities import Metric

    run = tracker.client.create_run(tracker.experiment_id, run_name=name)

    def log(metrics: dict[str, float], step: int) -> None:
        stamp = int(time.time() * 1000)
        rows = [Metric(k, v, stamp, step) for k, v in metrics.items() if v is not None]
        tracker.client.log_batch(run.info.run_id, metrics=rows)

    return log


def contenders_for(trackers: dict[str, Tracker], kind: str, server_pgid: int) -> tuple[list[Contender], list]:
    contenders, handles = [Contender("no logging", None, server_pgid=server_pgid)], []
    for store, tracker in trackers.items():
        pgid = server_pgid if store == "server" else None
        handle = buffered(tracker, f"{kind}-buffered-{store}")
        handles.append(handle)
        contenders.append(Contender(f"mlgrpo RunHandle, {store}", handle.log_metrics, handle.flush, pgid))
        contenders.append(Contender(f"log_batch every step, {store}", direct(tracker, f"{kind}-direct-{store}"),
                                    server_pgid=pgid))
    return contenders, handles


def run_kind(trackers: dict[str, Tracker], kind: str, args, server_pgid: int) -> list[Contender]:
    contenders, handles = contenders_for(trackers, kind, server_pgid)
    a = torch.randn(192, 192)
    work = WORK[kind]
    units = calibrate(work, args.step_ms, a)
    for _ in range(args.steps // args.turn):
        for contender in contenders:
            contender.run(args.turn, work, units, a)
    for handle in handles:
        handle.finish()
    return contenders


def run_all(args, folder: Path) -> dict[str, list[Contender]]:
    server = MlflowServer(f"sqlite:///{folder}/server.db", artifacts_destination=folder / "artifacts",
                          log_path=folder / "server.log").start()
    try:
        server.wait_ready(timeout_s=180)
        outbox = folder / "outbox"
        trackers = {  # default FlushPolicy: the background thread sends every 5 s
            "SQLite": Tracker.open(f"sqlite:///{folder}/local.db", "bench", policy=FlushPolicy(), outbox_dir=outbox),
            "server": Tracker.open(server.url, "bench", policy=FlushPolicy(), outbox_dir=outbox),
        }
        return {kind: run_kind(trackers, kind, args, server.process.pid) for kind in args.work.split(",")}
    finally:
        server.stop()


def table(contenders: list[Contender]) -> str:
    base = contenders[0]
    base_mean = statistics.mean(base.step_s)
    base_cpu, base_server = base.cpu_s / len(base.step_s), base.server_cpu_s / len(base.step_s)
    rows = []
    for c in contenders:
        n = len(c.step_s)
        mean = statistics.mean(c.step_s)
        rows.append([c.name, f"{statistics.median(c.step_s) * 1000:.1f}", f"{mean * 1000:.1f}",
                     f"{(mean / base_mean - 1) * 100:+.1f}%", f"{statistics.mean(c.log_s) * 1000:.2f}",
                     f"{c.flush_s / n * 1000:.1f}", f"{(c.cpu_s / n - base_cpu) * 1000:+.1f}",
                     f"{(c.server_cpu_s / n - base_server) * 1000:+.1f}" if c.server_pgid else "-"])
    headers = ["contender", "median step ms", "mean step ms", "step overhead", "ms in the log call",
               "ms/step waiting at turn-end flush", "CPU ms/step, this process", "CPU ms/step, server"]
    return markdown_table(headers, rows)


def report(results: dict[str, list[Contender]], args) -> str:
    keys = len(tracked_metrics(step_logs(0), LANGUAGES))
    intro = (
        f"{args.steps} steps per contender of ~{args.step_ms:g} ms fixed CPU work, {keys} metric keys a step "
        f"(16 metrics x {len(LANGUAGES)} languages plus macro / worst aggregates), in turns of {args.turn} steps. "
        f"Measured on a shared 2-core machine with other engineers' jobs running, so absolute times move with "
        f"their load; overheads are against the no-logging baseline of the same rounds. Step times include the "
        f"log call and, for mlgrpo's handle, its background thread sending every 5 s while the step runs. The "
        f"handle also flushes at the end of each of its turns (so that its sends do not land in another "
        f"contender's turn); that wait is shown apart: in a run those sends overlap training. CPU columns count "
        f"whole turns, both threads of this process and the server's processes, above the baseline: what the "
        f"store costs the machine, whether or not a core is free for it. The server runs on the same 2 cores "
        f"here; on a separate machine its CPU would not compete with training."
    )
    sections = [intro]
    for kind, contenders in results.items():
        what = {"torch": "matrix products on one torch thread (GIL released, like a step's kernels)",
                "python": "pure Python holding the GIL (like a generation loop's per-token code)"}[kind]
        sections += [f"Step = {what}:", table(contenders)]
    return "\n\n".join([*sections, summary(results, keys)])


def summary(results: dict[str, list[Contender]], keys: int) -> str:
    """The numbers to carry away: the training thread's cost, and the store's CPU per metric."""
    def per_step(c: Contender, base: Contender, server: bool) -> float:
        spent = c.server_cpu_s if server else c.cpu_s
        base_spent = base.server_cpu_s if server else base.cpu_s
        return (spent / len(c.step_s) - base_spent / len(base.step_s)) * 1000

    runs = [cs for cs in results.values()]
    call = max(statistics.mean(c.log_s) * 1000 for cs in runs for c in cs if c.name.startswith("mlgrpo"))
    sqlite = statistics.mean(per_step(cs[1], cs[0], False) for cs in runs)
    server = statistics.mean(per_step(cs[3], cs[0], True) for cs in runs)
    direct = statistics.mean(per_step(cs[2], cs[0], False) for cs in runs)
    direct_server = statistics.mean(per_step(cs[4], cs[0], True) for cs in runs)
    return (
        f"Summary: on the training thread, logging a step of {keys} keys costs at most {call:.2f} ms (naming, "
        f"aggregates and buffering). Storing them costs CPU somewhere: about {sqlite:.0f} ms a step with SQLite "
        f"({sqlite / keys:.2f} ms a metric, in mlgrpo's background thread) and {server:.0f} ms a step in the "
        f"server's processes, against {direct:.0f} and {direct_server:.0f} ms for log_batch on every step (MLflow "
        f"spends less a metric on batches of 1000). With no core free for it, that store cost stays under 5% of a step for steps "
        f"longer than about {20 * max(sqlite, server) / 1000:.1f} s; with a spare core, or a server on another "
        f"machine, a step pays only the log call. Fewer keys a step (logging_steps) scale the store cost down."
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--step-ms", type=float, default=100.0, help="fixed work per step (ms)")
    parser.add_argument("--work", default="torch,python", help="what a step does: torch, python or both")
    parser.add_argument("--turn", type=int, default=50, help="steps per contender before the next takes over")
    parser.add_argument("--no-write", action="store_true", help="print only; leave reports/benchmarks.md alone")
    args = parser.parse_args(argv)
    if not set(args.work.split(",")) <= set(WORK):
        parser.error(f"--work takes {sorted(WORK)}, comma-separated")
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="bench-tracking-") as folder:
        results = run_all(args, Path(folder))
    body = report(results, args)
    print(body)
    if not args.no_write:
        command = "OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_tracking"
        print(f"\nwritten to {write_section('tracking', 'MLflow tracking: cost of logging every step', body, command)}")


if __name__ == "__main__":
    main()
