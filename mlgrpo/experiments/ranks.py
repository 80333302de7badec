"""One run of a comparison on N ranks (`run.gpus_per_run` > 1): torchrun started by the run's worker process,
on exactly the GPUs its CUDA_VISIBLE_DEVICES names, every rank calling worker.execute_run for the same run.

    worker process (runner._worker_main, pinned to its GPUs)
      -> torchrun --standalone --nproc_per_node N -m mlgrpo.experiments.ranks ...   (launch_ranks)
         every rank: PartialState joins the group -> execute_run (rank 0 tracks, evaluates, reports progress)
         rank 0: progress and the outcome as tagged JSON lines on stdout
      -> the worker relays progress to the board, the rest of the output to worker.log

`--standalone` gives each launch its own rendezvous on a free port, so that several multi-rank runs share
a machine. On a CPU machine the ranks use gloo: that is how the tests run it. Knows nothing about placement.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mlgrpo.errors import UserError

TAG = "MLGRPO-RANK0 "  # rank 0's messages on stdout; everything else is library output


def launch_ranks(path: str, index: int, uri: str, run_id: str, run_dir: str, ranks: int, *, emit, threads: int,
                 log: Path, tags: dict | None = None):
    """Run `index` of the experiment on `ranks` processes, `tags` added to its MLflow run; its RunOutcome (as
    rank 0 reported it)."""
    from mlgrpo.experiments.launch import LAUNCH_VARIABLES
    from mlgrpo.experiments.worker import RunOutcome

    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARIABLES}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(ranks),
               "-m", "mlgrpo.experiments.ranks", path, str(index), uri, run_id, run_dir, str(threads),
               json.dumps(tags or {})]
    outcome = None
    with open(log, "a", encoding="utf-8") as sink:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink, text=True, env=env)
        try:
            for line in process.stdout:
                if line.startswith(TAG):
                    message = json.loads(line[len(TAG):])
                    if "outcome" in message:
                        outcome = RunOutcome(**message["outcome"])
                    else:
                        emit(message)
                else:
                    sink.write(line)
                    sink.flush()
        finally:
            code = process.wait()  # a SIGTERM to the worker reaches torchrun too: it stops its ranks
    if outcome is None:
        raise UserError(f"the {ranks} ranks of run {Path(run_dir).name} exited with code {code} before reporting an "
                        f"outcome (their output is in {log})")
    return outcome


def _say(message: dict) -> None:
    print(TAG + json.dumps(message, ensure_ascii=False, default=str), flush=True)


def main(argv: list[str]) -> int:
    import torch
    from accelerate import PartialState

    from mlgrpo.experiments.worker import execute_run

    path, index, uri, run_id, run_dir, threads, tags = argv
    state = PartialState(cpu=not torch.cuda.is_available())
    main_rank = state.is_main_process
    outcome = execute_run(path, int(index), uri, run_id if main_rank else None, run_dir,
                          emit=_say if main_rank else (lambda message: None), threads=int(threads),
                          tags={**json.loads(tags), "placement.ranks": str(state.num_processes)})
    if main_rank:
        _say({"outcome": {"run_name": outcome.run_name, "status": outcome.status, "seconds": outcome.seconds,
                          "eval_start": outcome.eval_start, "eval_end": outcome.eval_end,
                          "message": outcome.message}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
