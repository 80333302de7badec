"""`mlgrpo run`: every run of a comparison (arms x seeds), scheduled on worker processes, tracked in MLflow.

    plan -> tracking (fail fast) -> tiny model built once -> parent run -> for each run: skip if
    FINISHED, resume if interrupted, else new -> workers (one thread each) -> progress -> summary

Each worker process executes one run at a time (worker.execute_run). Two one-thread processes on two
cores ran ~1.65x the throughput of one two-thread process (../shared/research/stack.md), so `auto` uses
one worker per core. Workers die with their parent (PR_SET_PDEATHSIG): a SIGKILLed `mlgrpo run` leaves
no orphan training, and runs left RUNNING are resumed by the next invocation.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_module
import signal
import subprocess
import sys
import time
from pathlib import Path

from mlgrpo import __version__
from mlgrpo.errors import UserError
from mlgrpo.experiments.progress import ProgressBoard
from mlgrpo.runtime import default_threads


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def worker_count(setting, runs: int) -> int:
    if setting in (None, "auto"):
        return max(1, min(runs, default_threads()))
    if not isinstance(setting, int) or setting < 1:
        raise UserError(f"run.workers must be 'auto' or an integer >= 1, got {setting!r}")
    return min(setting, max(1, runs))


def run_experiment(path: str, *, tracking_uri: str | None = None, only=None, seeds=None, dry_run: bool = False,
                   workers=None, stream=None) -> int:
    from mlgrpo.experiments import load_experiment

    stream = stream or sys.stderr
    if world_size() > 1:  # under accelerate launch / torchrun: every rank runs the same runs, together
        from mlgrpo.experiments.launch import run_distributed

        return run_distributed(path, tracking_uri=tracking_uri, only=only, seeds=seeds, dry_run=dry_run,
                               stream=stream)
    experiment = load_experiment(path)
    runs = experiment.plan(only=only, seeds=seeds)
    if dry_run:
        print_plan(runs, stream)
        return 0
    check_output(output_root(experiment), experiment.run_settings.min_free_mb)
    board = ProgressBoard(len(runs), stream)
    uri, parent, pending = open_runs(experiment, path, runs, tracking_uri, board, indexed=bool(only or seeds))
    # Longest runs first (a critic makes a PPO step about twice a GRPO step here), so that the last
    # worker busy is not one left alone with a long run while the others idle.
    pending.sort(key=lambda item: item[1].algorithm.name != "ppo")
    n_workers = worker_count(workers if workers is not None else experiment.run_settings.workers, len(pending))
    threads = max(1, default_threads() // n_workers)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops as cleanly as Ctrl-C
    try:
        outcomes = _schedule(str(path), pending, uri, output_root(experiment), n_workers, threads, board)
    finally:
        signal.signal(signal.SIGTERM, previous)
    return close_parent(parent, outcomes, stream, report=(str(path), uri))


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def world_size() -> int:
    """Processes in this launch (WORLD_SIZE, set by torchrun and accelerate launch; 1 for a plain command)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        raise UserError(f"WORLD_SIZE must be a whole number, got {os.environ['WORLD_SIZE']!r}") from None


def system_tags() -> dict[str, str]:
    """Hardware and library versions, for the report's setup section."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import torch

    tags = {"system.cpus": str(os.cpu_count()), "system.world_size": str(world_size()),
            "system.platform": platform.platform(terse=True), "system.python": platform.python_version(),
            "system.gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"}
    for package in ("torch", "transformers", "trl", "accelerate", "peft", "mlflow"):
        try:
            tags[f"versions.{package}"] = version(package)
        except PackageNotFoundError:
            tags[f"versions.{package}"] = "not installed"
    return tags


def print_plan(runs, stream) -> None:
    for run in runs:
        print(f"{run.run_name}  (algorithm {run.algorithm.name}, config {run.config_hash})", file=stream)
    print(f"{len(runs)} runs; dry run: nothing trained", file=stream)


def check_output(folder: Path, min_free_mb: int) -> None:
    """Before anything is created: the run folder can be written, and its disk has room (a UserError if not)."""
    import shutil
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".mlgrpo-write-check-"):
            pass
    except OSError as exc:
        raise UserError(f"cannot write run outputs to {folder}: {exc.strerror or exc}; set run.output_dir to a "
                        "writable folder") from None
    free_mb = shutil.disk_usage(folder).free / 2**20
    if free_mb < min_free_mb:
        raise UserError(f"only {free_mb:.0f} MB free on the disk of {folder}, and run.min_free_mb is {min_free_mb}: "
                        "free some space, point run.output_dir elsewhere, or lower run.min_free_mb")


def output_root(experiment) -> Path:
    return Path(experiment.run_settings.output_dir or Path("runs") / experiment.name)


def open_runs(experiment, path, runs, tracking_uri, board: ProgressBoard, indexed: bool, build=None):
    """(uri, parent run, [(plan index, run, child run id)] still to do): the store probed (fail fast), tiny
    models built (by `build`, default: here), a parent run for this invocation and a child run per arm x seed, finished ones skipped."""
    from mlgrpo.tracking import Tracker, resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri, experiment.tracking.uri)
    tracker = Tracker.open(uri, experiment.tracking_experiment)
    (build or _prepare_models)(runs, board.stream)
    common_tags = {"mlgrpo.version": __version__, "git.commit": git_commit(), "experiment.file": str(path),
                   **system_tags()}
    parent = tracker.start_parent(f"{experiment.name}-{time.strftime('%Y%m%d-%H%M%S')}", common_tags,
                                  {"runs": len(runs), "arms": ",".join(experiment.arms),
                                   "seeds": ",".join(map(str, experiment.seeds))})
    parent.log_text(experiment.resolved_yaml(), "experiment.resolved.yaml")
    full_plan = experiment.plan()
    pending = []
    for index, run in enumerate(runs):
        identity = {"arm": run.arm, "seed": str(run.seed), "config_hash": run.config_hash}
        tags = {**common_tags, **identity, "algorithm": run.algorithm.name,
                "languages": ",".join(run.data.languages)}
        child, state = tracker.child_run(parent, identity, run.run_name, tags, run.flat_params)
        if state == "finished":
            board.skipped(run.run_name, "finished earlier")
            continue
        pending.append((full_plan.index(run) if indexed else index, run, child.run_id))
    return uri, parent, pending


def close_parent(parent, outcomes: list[dict], stream, report: tuple[str, str] | None = None) -> int:
    """Prints the summary, writes the comparison report (from MLflow, logged as the parent run's "report"
    artifact) when `report` = (experiment file, tracking URI) is given, marks the parent run by its
    children's outcomes; the exit code."""
    failed = [o for o in outcomes if o["status"] != "FINISHED"]
    _print_summary(outcomes, stream)
    if report is not None and not any(o["status"] == "KILLED" for o in failed):
        write_and_log_report(parent, *report, stream)
    parent.finish("FAILED" if any(o["status"] == "FAILED" for o in failed) else ("KILLED" if failed else "FINISHED"))
    return 130 if any(o["status"] == "KILLED" for o in failed) else (1 if failed else 0)


def write_and_log_report(parent, path: str, uri: str, stream) -> None:
    """The comparison report of every run so far; a report that cannot be written is said, not fatal:
    the training is done and tracked, and `mlgrpo report` can write it later."""
    from mlgrpo.reports.build import write_report

    print("writing the comparison report ...", file=stream, flush=True)
    try:
        parent.flush()
        files = write_report(path, tracking_uri=uri)
    except Exception as exc:  # noqa: BLE001 - the runs are safe in MLflow whatever went wrong here
        why = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
        print(f"report not written: {why}; run `mlgrpo report {path}` later", file=stream, flush=True)
        return
    parent.log_artifact(files.folder, "report")
    print(f"report: {files.html} (and report.md, figures, tables; also in MLflow as the parent run's "
          f"'report' artifact)", file=stream, flush=True)


def _prepare_models(runs, stream) -> None:
    """Build each tiny model once, here, before workers start (they would otherwise race to build it)."""
    from mlgrpo.models.loading import classify_spec, resolve

    for spec in sorted({run.model.policy for run in runs}):
        if classify_spec(spec)[0] == "tiny":
            print(f"model {spec}: building or re-using the tiny base model", file=stream, flush=True)
            resolve(spec)


def _schedule(path, pending, uri, output_root: Path, n_workers: int, threads: int, board: ProgressBoard) -> list[dict]:
    ctx = mp.get_context("spawn")
    messages = ctx.Queue()
    waiting, active, outcomes = list(pending), {}, []
    try:
        while waiting or active:
            while waiting and len(active) < n_workers:
                index, run, run_id = waiting.pop(0)
                process = ctx.Process(target=_worker_main, name=run.run_name, daemon=False,
                                      args=(path, index, uri, run_id, str(output_root / run.run_name), threads, messages))
                process.start()
                active[run.run_name] = (process, run_id, time.perf_counter())
            _drain(messages, board, active, outcomes, timeout=1.0)
            for name, (process, run_id, started) in list(active.items()):
                if not process.is_alive() and name in active:
                    _drain(messages, board, active, outcomes, timeout=0.5)
                    if name in active:  # died without a word: a crash, or killed from outside
                        active.pop(name)
                        _mark(uri, path, run_id, "FAILED")
                        outcomes.append({"run": name, "status": "FAILED", "seconds": time.perf_counter() - started,
                                         "message": f"worker exited with code {process.exitcode}"})
                        board.finished(name, "FAILED", time.perf_counter() - started)
    except KeyboardInterrupt:
        # Ctrl-C reached the workers too (one process group); a SIGTERM sent to this process alone (a
        # scheduler, `kill PID`) did not: pass it on. Each worker stops at a step boundary, saves and marks
        # its run KILLED (worker.StopFlag). Wait for them, so that nothing is left half-written.
        print("interrupted: stopping runs at the next step boundary ...", file=board.stream, flush=True)
        for process, _, _ in active.values():
            if process.is_alive():
                process.terminate()
        for process, _, _ in active.values():
            process.join()
        _drain(messages, board, active, outcomes, timeout=0.5)
        outcomes += [{"run": n, "status": "KILLED", "seconds": 0.0, "message": "interrupted"} for n in active]
        for _, run, run_id in waiting:  # created for this invocation, never started: not left RUNNING
            _mark(uri, path, run_id, "KILLED")
            outcomes.append({"run": run.run_name, "status": "KILLED", "seconds": 0.0, "message": "not started"})
    return outcomes


def _drain(messages, board, active, outcomes, timeout: float) -> None:
    deadline = time.perf_counter() + timeout
    while True:
        try:
            message = messages.get(timeout=max(0.0, deadline - time.perf_counter()))
        except queue_module.Empty:
            return
        if "status" in message:
            active.pop(message["run"], None)
            outcomes.append(message)
            board.finished(message["run"], message["status"], message["seconds"])
            if message.get("message"):
                print(f"  {message['run']}: {message['message']}", file=board.stream, flush=True)
        else:
            board.update(message)


def _mark(uri: str, path: str, run_id: str, status: str) -> None:
    from mlgrpo.experiments import load_experiment
    from mlgrpo.tracking import Tracker

    Tracker.open(uri, load_experiment(path).tracking_experiment).attach(run_id).finish(status)


def _die_with_parent() -> None:
    """Ask Linux to send SIGTERM to this worker when its parent dies (even by SIGKILL)."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _log_to_file(run_dir: str) -> Path:
    """Send this worker's stdout and stderr (library warnings, progress bars) to <run_dir>/worker.log: the
    parent's progress board is what the user reads; the log keeps everything for when a run fails."""
    log = Path(run_dir) / "worker.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return log


def _worker_main(path, index, uri, run_id, run_dir, threads, messages) -> None:
    _die_with_parent()
    log = _log_to_file(run_dir)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    from mlgrpo.experiments.worker import execute_run

    started = time.perf_counter()
    try:
        outcome = execute_run(path, index, uri, run_id, run_dir, emit=messages.put, threads=threads)
        messages.put({"run": outcome.run_name, "status": outcome.status, "seconds": outcome.seconds,
                      "message": outcome.message, "eval_start": outcome.eval_start, "eval_end": outcome.eval_end})
    except UserError as exc:
        messages.put({"run": Path(run_dir).name, "status": "FAILED", "seconds": time.perf_counter() - started,
                      "message": str(exc)})
    except Exception as exc:  # a bug or a library error: report it with its type, the run is FAILED
        messages.put({"run": Path(run_dir).name, "status": "FAILED", "seconds": time.perf_counter() - started,
                      "message": f"{type(exc).__name__}: {exc} (traceback in {log})"})
        raise


def _print_summary(outcomes: list[dict], stream) -> None:
    """Per run and language: the held-out exact match at step 0 and at the end."""
    rows = [o for o in outcomes if o.get("eval_start") and o.get("eval_end")]
    if not rows:
        return
    print("\nheld-out exact match per language (step 0 -> end):", file=stream)
    for o in sorted(rows, key=lambda o: o["run"]):
        start, end = o["eval_start"]["per_language"], o["eval_end"]["per_language"]
        cells = [f"{lang} {start[lang].get('exact_match', float('nan')):.2f}->{end[lang].get('exact_match', float('nan')):.2f}"
                 for lang in sorted(end)]
        print(f"  {o['run']:<28} " + "  ".join(cells), file=stream)
