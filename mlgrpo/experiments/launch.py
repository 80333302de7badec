"""`mlgrpo run` under `accelerate launch` / `torchrun`: the runs of a comparison one after another, each
trained by all ranks together (the trainer shards every batch over them).

    main rank: store probed (fail fast) -> tiny models built -> parent and child runs -> the runs to do
      -> broadcast to every rank
    every rank: for each run, worker.execute_run inline (the main rank tracks, evaluates and shows progress)
    main rank: parent run status, summary

All ranks read and write the same run folders (checkpoints, resume): on several nodes, `run.output_dir`
must be on a shared filesystem. While the main rank evaluates, the others wait in the next step's
collectives; evaluations longer than the process group's timeout (30 minutes by default) need a larger
timeout in the accelerate config.
"""

from __future__ import annotations

import os
import time

from mlgrpo.errors import UserError
from mlgrpo.experiments.progress import ProgressBoard
from mlgrpo.experiments.session import check_output, close_parent, mark_run, open_runs, output_root, print_plan
from mlgrpo.runtime import default_threads


def run_distributed(path: str, *, tracking_uri: str | None, only, seeds, dry_run: bool, stream) -> int:
    import torch
    from accelerate import PartialState

    from mlgrpo.experiments import load_experiment
    from mlgrpo.experiments.worker import execute_run, quiet_libraries

    # Joins the process group torchrun / accelerate launch set up; without cpu=True accelerate does not see
    # a multi-process launch on a machine with no GPU (and the Trainer's own state is this same one).
    state = PartialState(cpu=not torch.cuda.is_available())
    main = state.is_main_process
    experiment = load_experiment(path)  # every rank: the same file, so the same plan
    runs = experiment.plan(only=only, seeds=seeds)
    if dry_run:
        if main:
            print_plan(runs, stream)
        return 0
    quiet_libraries()  # the progress board is what people read; no worker.log here, ranks share the terminal
    board = ProgressBoard(len(runs), stream)
    parent, todo = None, None
    if main:
        try:
            check_output(output_root(experiment), experiment.run_settings.min_free_mb)
            uri, parent, pending = open_runs(experiment, path, runs, tracking_uri, board,
                                             indexed=bool(only or seeds), build=_build_apart)
            todo = {"uri": uri, "runs": [(index, run.run_name, run_id) for index, run, run_id in pending]}
        except UserError as exc:
            todo = {"error": str(exc)}
    todo = _from_main(todo)
    if "error" in todo:
        if main:
            raise UserError(todo["error"])
        return 2
    local = int(os.environ.get("LOCAL_WORLD_SIZE", state.num_processes))
    threads = max(1, default_threads() // max(1, local))
    outcomes: list[dict] = []
    runs_left = list(todo["runs"])
    run_name, started = "", time.perf_counter()
    try:
        while runs_left:
            index, run_name, run_id = runs_left.pop(0)
            started = time.perf_counter()
            outcome = execute_run(str(path), index, todo["uri"], run_id if main else None,
                                  str(output_root(experiment) / run_name), emit=board.update if main else _silent,
                                  threads=threads)
            outcomes.append({"run": outcome.run_name, "status": outcome.status,
                             "seconds": time.perf_counter() - started, "message": outcome.message,
                             "eval_start": outcome.eval_start, "eval_end": outcome.eval_end})
            if main:
                board.finished(outcome.run_name, outcome.status, outcome.seconds)
            if outcome.status != "FINISHED":  # stopped by a signal: every rank agreed on it (worker.StopAtBoundary)
                break
    except BaseException as exc:  # the run itself is already FAILED / KILLED (worker.execute_run)
        if main:
            status = "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
            outcomes.append({"run": run_name, "status": status, "seconds": time.perf_counter() - started,
                             "message": f"{type(exc).__name__}: {exc}"})
            _close_unstarted(str(path), todo["uri"], runs_left, outcomes)
            close_parent(parent, outcomes, stream)
        raise
    if not main:
        return 0
    _close_unstarted(str(path), todo["uri"], runs_left, outcomes)
    return close_parent(parent, outcomes, stream, report=(str(path), todo["uri"]))


def _close_unstarted(path: str, uri: str, runs_left: list, outcomes: list[dict]) -> None:
    """Runs opened for this invocation but never started (a stop or a failure came first): KILLED, not
    left RUNNING; the next invocation resumes them."""
    for _, run_name, run_id in runs_left:
        mark_run(uri, path, run_id, "KILLED")
        outcomes.append({"run": run_name, "status": "KILLED", "seconds": 0.0, "message": "not started"})


def _from_main(value):
    """`value` as the main rank has it, on every rank."""
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _build_apart(runs, stream) -> None:
    """Build the tiny models in a plain process: built here, their SFT Trainer would see this launch's
    process group and wait forever for the other ranks, which wait for the run list."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARIABLES}
    code = ("import sys; from mlgrpo.experiments.session import prepare_models; from types import SimpleNamespace as N; "
            "prepare_models([N(model=N(policy=s)) for s in sys.argv[1:]], sys.stderr)")
    specs = sorted({run.model.policy for run in runs})
    stream.flush()
    result = subprocess.run([sys.executable, "-c", code, *specs], env=env)
    if result.returncode != 0:
        raise UserError(f"building the tiny model failed (exit code {result.returncode}); its error is above")


# Set by torchrun / accelerate launch; a process without them is a plain single process.
LAUNCH_VARIABLES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
                    "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
                    "ACCELERATE_USE_CPU", "ACCELERATE_MIXED_PRECISION", "ACCELERATE_USE_DEEPSPEED",
                    "ACCELERATE_USE_FSDP")


def _silent(message: dict) -> None:
    pass
