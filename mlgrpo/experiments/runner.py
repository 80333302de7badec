"""`mlgrpo run`: every run of a comparison (arms x seeds), scheduled on worker processes, tracked in MLflow.

    plan -> session.open_runs (output folder checked, tracking probed, tiny model built once, parent
    run, a child run per arm x seed: skip if FINISHED, resume if interrupted, else new) -> workers (one
    thread each) -> progress -> session.close_parent (summary, comparison report, parent status)

Under `accelerate launch` / `torchrun` (WORLD_SIZE > 1) launch.run_distributed runs them instead; with
`run.backend: ray`, ray_backend.run_on_ray.

On a machine with GPUs, placement.py splits them into groups of `run.gpus_per_run`: one worker per group,
pinned to it by CUDA_VISIBLE_DEVICES (a run with N > 1 GPUs is launched with N ranks, ranks.py).

Each worker process executes one run at a time (worker.execute_run). Two one-thread processes on two
cores ran ~1.65x the throughput of one two-thread process (../shared/research/stack.md), so `auto` uses
one worker per core. Workers die with their parent (PR_SET_PDEATHSIG): a SIGKILLed `mlgrpo run` leaves
no orphan training, and runs left RUNNING are resumed by the next invocation.
"""

from __future__ import annotations

import errno
import multiprocessing as mp
import os
import queue as queue_module
import shutil
import signal
import socket
import sys
import time
from pathlib import Path

from mlgrpo.errors import UserError
from mlgrpo.experiments.progress import ProgressBoard
from mlgrpo.experiments.session import (check_output, close_parent, mark_run, open_runs, output_root, print_plan,
                                        world_size)
from mlgrpo.runtime import default_threads


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
    check_backend(experiment)
    runs = experiment.plan(only=only, seeds=seeds)
    setting = workers if workers is not None else experiment.run_settings.workers
    if experiment.run_settings.backend == "ray":
        from mlgrpo.experiments.ray_backend import run_on_ray

        return run_on_ray(experiment, str(path), runs, tracking_uri=tracking_uri, indexed=bool(only or seeds),
                          dry_run=dry_run, stream=stream)
    if dry_run:
        print_plan(runs, stream)
        print("\n".join(placement_lines(experiment, runs, setting)), file=stream)
        return 0
    check_output(output_root(experiment), experiment.run_settings.min_free_mb)
    placement = plan_placement(experiment, longest_first(runs), setting)
    if placement.gpus_per_run:
        refuse_oversized(experiment)
    board = ProgressBoard(len(runs), stream)
    uri, parent, pending = open_runs(experiment, path, runs, tracking_uri, board, indexed=bool(only or seeds))
    pending = longest_first(pending, key=lambda item: item[1])
    placement = plan_placement(experiment, [run for _, run, _ in pending], setting)
    groups = worker_groups(placement)
    n_workers = placement.workers
    threads = max(1, default_threads() // n_workers)
    if pending:
        where = f" on GPU groups {' '.join(','.join(g) for g in groups)}" if placement.gpus_per_run else ""
        print(f"{len(pending)} run(s) to train in {n_workers} worker process(es), {threads} torch thread(s) each"
              f"{where}", file=stream, flush=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops as cleanly as Ctrl-C
    try:
        outcomes = _schedule(str(path), pending, uri, output_root(experiment), groups, threads, board)
    finally:
        signal.signal(signal.SIGTERM, previous)
    return close_parent(parent, outcomes, stream, report=(str(path), uri))


def worker_groups(placement) -> list[tuple[str, ...]]:
    """One entry per worker process, its devices: on a CPU machine every worker's is (), and there are as many
    as the placement has workers (merging equal device groups once left a CPU machine one run at a time).

    >>> from mlgrpo.experiments.placement import place
    >>> worker_groups(place(["a", "b", "c"], (), 0, workers=2, cpu_workers=2))
    [(), ()]
    >>> worker_groups(place(["a", "b", "c"], ("0", "1"), 1, workers="auto", cpu_workers=2))
    [('0',), ('1',)]
    """
    return list({slot.worker: slot.devices for slot in placement.slots}.values()) or [()]


def longest_first(items: list, key=lambda run: run) -> list:
    """Longest runs first (a critic makes a PPO step about twice a GRPO step here), so that the last worker
    busy is not one left alone with a long run while the others idle."""
    return sorted(items, key=lambda item: key(item).algorithm.name != "ppo")


def plan_placement(experiment, runs, workers_setting):
    """Where each run goes on this machine (placement.place over the visible GPUs)."""
    from mlgrpo.experiments.placement import place, run_costs, visible_gpus

    return place([run.run_name for run in runs], visible_gpus(), experiment.run_settings.gpus_per_run,
                 workers=workers_setting, cpu_workers=worker_count("auto", len(runs)), costs=run_costs(runs))


def placement_lines(experiment, runs, workers_setting) -> list[str]:
    """What `--dry-run` and `validate` print about where the runs go."""
    if experiment.run_settings.backend == "ray":
        from mlgrpo.experiments.ray_backend import describe

        return describe(experiment, runs)
    return plan_placement(experiment, longest_first(runs), workers_setting).lines()


def refuse_oversized(experiment) -> None:
    """Before anything starts on GPUs: an arm whose estimated peak exceeds one GPU's memory is refused."""
    from mlgrpo.experiments.memory import plan_memory
    from mlgrpo.experiments.placement import check_memory

    memory = plan_memory(experiment)
    if not isinstance(memory, str) and memory.device != "cpu":
        check_memory({arm.arm: arm.peak for arm in memory.arms}, memory.available, memory.device)


def check_backend(experiment) -> None:
    from mlgrpo.experiments.cluster import check_shared_output

    check_shared_output(experiment)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _schedule(path, pending, uri, output_root: Path, groups: list[tuple[str, ...]], threads: int,
              board: ProgressBoard) -> list[dict]:
    """One worker process per device group (on CPU, groups of no device: one per worker). A run takes a free
    group, which is free again once its process has exited (and so released the GPU's memory)."""
    ctx = mp.get_context("spawn")
    messages = ctx.Queue()
    waiting, active, outcomes = list(pending), {}, []  # active: runs whose outcome has not come yet
    free, processes = list(groups), {}  # processes: run name -> (process, devices), until it has exited
    try:
        while waiting or active or processes:
            while waiting and free:
                index, run, run_id = waiting.pop(0)
                devices = free.pop(0)
                process = ctx.Process(target=_worker_main, name=run.run_name, daemon=False,
                                      args=(path, index, uri, run_id, str(output_root / run.run_name), threads, messages,
                                            devices))
                process.start()
                active[run.run_name] = (process, run_id, time.perf_counter())
                processes[run.run_name] = (process, devices)
            _drain(messages, board, active, outcomes, timeout=1.0)
            for name, (process, run_id, started) in list(active.items()):
                if not process.is_alive() and name in active:
                    _drain(messages, board, active, outcomes, timeout=0.5)
                    if name in active:  # died without a word: a crash, or killed from outside
                        active.pop(name)
                        mark_run(uri, path, run_id, "FAILED")
                        outcomes.append({"run": name, "status": "FAILED", "seconds": time.perf_counter() - started,
                                         "message": f"worker exited with code {process.exitcode}"})
                        board.finished(name, "FAILED", time.perf_counter() - started)
            for name, (process, devices) in list(processes.items()):
                if not process.is_alive():
                    process.join()
                    processes.pop(name)
                    free.append(devices)
    except KeyboardInterrupt:
        # Ctrl-C reached the workers too (one process group); a SIGTERM sent to this process alone (a
        # scheduler, `kill PID`) did not: pass it on. Each worker stops at a step boundary, saves and marks
        # its run KILLED (worker.StopFlag). Wait for them, so that nothing is left half-written.
        print("interrupted: stopping runs at the next step boundary ...", file=board.stream, flush=True)
        for process, _ in processes.values():
            if process.is_alive():
                process.terminate()
        for process, _ in processes.values():
            process.join()
        _drain(messages, board, active, outcomes, timeout=0.5)
        outcomes += [{"run": n, "status": "KILLED", "seconds": 0.0, "message": "interrupted"} for n in active]
        for _, run, run_id in waiting:  # created for this invocation, never started: not left RUNNING
            mark_run(uri, path, run_id, "KILLED")
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


def failure_message(exc: BaseException, run_dir: str, log) -> str:
    """One line for a run that failed; a full disk says what to do (the checkpoints allow it).

    >>> failure_message(OSError(28, "No space left on device"), "runs/x/grpo-seed0", "worker.log")
    'the disk of runs/x/grpo-seed0 is full ([Errno 28] No space left on device): free some space and run the same command again; it resumes from the last complete checkpoint (traceback in worker.log)'
    >>> failure_message(RuntimeError("boom"), "runs/x/grpo-seed0", "worker.log")
    'RuntimeError: boom (traceback in worker.log)'
    """
    if disk_full(exc, run_dir):
        return (f"the disk of {run_dir} is full ({exc}): free some space and run the same command again; it resumes "
                f"from the last complete checkpoint (traceback in {log})")
    return f"{type(exc).__name__}: {exc} (traceback in {log})"


def disk_full(exc: BaseException, run_dir: str) -> bool:
    """ENOSPC/EDQUOT anywhere in the exception's chain, or no room left on the run folder's disk: torch.save
    and safetensors report a failed write as their own errors, without the errno."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        current = current.__cause__ or current.__context__
    try:
        return shutil.disk_usage(run_dir).free < 2**20
    except OSError:
        return False


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


def _worker_main(path, index, uri, run_id, run_dir, threads, messages, devices=()) -> None:
    from mlgrpo.experiments.placement import cuda_env

    _die_with_parent()
    os.environ.update(cuda_env(devices))  # before anything initialises CUDA: this run sees its GPUs only
    log = _log_to_file(run_dir)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    from mlgrpo.experiments.worker import execute_run

    started = time.perf_counter()
    tags = {"placement.node": socket.gethostname(), "placement.devices": ",".join(devices) or "cpu"}
    try:
        if len(devices) > 1:  # one rank per GPU, on exactly these (ranks.py)
            from mlgrpo.experiments.ranks import launch_ranks

            outcome = launch_ranks(path, index, uri, run_id, run_dir, len(devices), emit=messages.put,
                                   threads=threads, log=log, tags=tags)
        else:
            outcome = execute_run(path, index, uri, run_id, run_dir, emit=messages.put, threads=threads, tags=tags)
        messages.put({"run": outcome.run_name, "status": outcome.status, "seconds": outcome.seconds,
                      "message": outcome.message, "eval_start": outcome.eval_start, "eval_end": outcome.eval_end})
    except UserError as exc:
        messages.put({"run": Path(run_dir).name, "status": "FAILED", "seconds": time.perf_counter() - started,
                      "message": str(exc)})
    except Exception as exc:  # a bug, a library error or a full disk: one line, the run is FAILED
        messages.put({"run": Path(run_dir).name, "status": "FAILED", "seconds": time.perf_counter() - started,
                      "message": failure_message(exc, run_dir, log)})
        raise  # the traceback, into worker.log
