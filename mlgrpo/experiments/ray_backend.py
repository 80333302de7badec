"""`run.backend: ray`: every run of the grid a Ray task on the cluster RAY_ADDRESS names (Ray's convention;
unset: a Ray instance started on this machine), holding the GPUs, CPUs and memory it needs.

    driver (mlgrpo run): output folder checked -> parent and child runs (session.open_runs) -> one task per run
      -> progress from a queue actor on the driver's node -> the same board -> close_parent (report, views)
    task (any node): tags where it runs (placement.node, placement.node_ip, placement.devices, and a
      placement.ran_on.<node> tag for every node it ran on) -> worker.execute_run (or ranks.launch_ranks for several GPUs)

A task whose node dies is retried by Ray on another node (max_retries): execute_run finds the run's last
complete checkpoint under the shared `run.output_dir` (cluster.py refuses a machine-local one) and resumes
from it; the tracker drops metric steps the run already has, so nothing is logged twice, and only the steps
since that checkpoint are trained again. Metrics, reports and views go to the tracking server, which every
node must reach (a tracking server; docs/distributed.md). Only this module imports ray.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from mlgrpo.errors import UserError
from mlgrpo.experiments.progress import ProgressBoard
from mlgrpo.experiments.session import check_output, close_parent, mark_run, open_runs, output_root, print_plan

INSTALL = 'pip install -e ".[ray]"'
RETRIES = 3  # a run survives this many node failures; a bug fails it at once (retry_exceptions=False)


def import_ray():
    try:
        import ray
    except ImportError:
        raise UserError(f"run.backend is ray but Ray is not installed: {INSTALL}") from None
    return ray


def resources(experiment, run, peaks: dict | None = None) -> dict:
    """What one run's task holds: its GPUs, one CPU per rank (each worker trains with one thread on CPU), and
    on CPU runs the RAM validate estimates for its arm (`peaks`: arm -> bytes), so that Ray does not start
    more runs on a node than its memory holds. A GPU run's estimate is GPU memory, which the GPUs it holds
    already reserve."""
    gpus = experiment.run_settings.gpus_per_run or 0
    held = {"num_gpus": gpus, "num_cpus": max(1, gpus)}
    if not gpus and peaks and run.arm in peaks:
        held["memory"] = int(peaks[run.arm])
    return held


def estimated_peaks(experiment) -> dict:
    """{arm: estimated peak bytes} on CPU (experiments/memory.py), or {} where there is no estimate."""
    from mlgrpo.experiments.memory import plan_memory

    memory = plan_memory(experiment)
    if isinstance(memory, str) or memory.device != "cpu":
        return {}
    return {arm.arm: arm.peak for arm in memory.arms}


def describe(experiment, runs) -> list[str]:
    """What `--dry-run` and `validate` print for a Ray run: nothing is placed until the cluster schedules it."""
    address = os.environ.get("RAY_ADDRESS") or "unset: a Ray instance started on this machine"
    first = resources(experiment, runs[0]) if runs else {"num_gpus": 0, "num_cpus": 1}
    return [f"placement: on the Ray cluster (RAY_ADDRESS {address}): {len(runs)} run(s), each a task holding "
            f"{first['num_gpus']} GPU(s) and {first['num_cpus']} CPU(s), placed by Ray where they fit; a run whose "
            f"node dies resumes from its last checkpoint on another node (up to {RETRIES} times)"]


def run_on_ray(experiment, path: str, runs, *, tracking_uri, indexed: bool, dry_run: bool, stream) -> int:
    if dry_run:
        print_plan(runs, stream)
        print("\n".join(describe(experiment, runs)), file=stream)
        return 0
    ray = import_ray()
    check_output(output_root(experiment), experiment.run_settings.min_free_mb)
    address = os.environ.get("RAY_ADDRESS")
    # Before any MLflow run is opened: an unreachable cluster leaves nothing RUNNING. Ray's task logs would
    # interleave with the board: each run's own output stays on its node.
    ray.init(address=address, log_to_driver=False, **({} if address else {"include_dashboard": False}))
    outcomes: list[dict] = []
    tasks: dict = {}
    parent = None
    try:
        board = ProgressBoard(len(runs), stream)
        uri, parent, pending = open_runs(experiment, path, runs, tracking_uri, board, indexed=indexed)
        if not uri.startswith(("http://", "https://", "postgresql", "mysql")):
            print(f"note: the tracking store is a file on this machine ({uri.split('://')[0]}); tasks on other "
                  "machines cannot write to it: use a tracking server (docs/distributed.md)", file=stream, flush=True)
        from ray.util.queue import Empty, Queue
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        messages = Queue(actor_options={"num_cpus": 0, "scheduling_strategy": here})  # dies only with the driver
        remote = ray.remote(_task)
        absolute = str(Path(path).resolve())
        peaks = estimated_peaks(experiment) if not experiment.run_settings.gpus_per_run else {}
        for index, run, run_id in pending:
            ref = remote.options(name=run.run_name, max_retries=RETRIES, retry_exceptions=False,
                                 **resources(experiment, run, peaks)).remote(
                absolute, index, uri, run_id, str(output_root(experiment).resolve() / run.run_name), messages)
            tasks[ref] = (run.run_name, run_id, time.perf_counter())
        print(f"{len(pending)} run(s) submitted to the Ray cluster ({_nodes(ray)})", file=stream, flush=True)
        while tasks:
            done, _ = ray.wait(list(tasks), num_returns=1, timeout=1.0)
            _drain(messages, board, Empty)
            for ref in done:
                name, run_id, started = tasks.pop(ref)
                outcomes.append(_outcome(ray, ref, name, run_id, started, uri, path))
                board.finished(name, outcomes[-1]["status"], outcomes[-1]["seconds"])
                if outcomes[-1].get("message"):
                    print(f"  {name}: {outcomes[-1]['message']}", file=stream, flush=True)
        _drain(messages, board, Empty)
    except KeyboardInterrupt:
        if parent is None:  # before any run was opened: nothing to stop
            raise
        print("interrupted: stopping runs at the next step boundary ...", file=stream, flush=True)
        for ref in tasks:
            ray.cancel(ref)  # a KeyboardInterrupt inside the task: execute_run saves and marks the run KILLED
        for ref, (name, run_id, started) in tasks.items():
            outcomes.append(_outcome(ray, ref, name, run_id, started, uri, path, interrupted=True))
    finally:
        ray.shutdown()
    return close_parent(parent, outcomes, stream, report=(path, uri))


def _nodes(ray) -> str:
    alive = [node for node in ray.nodes() if node.get("Alive")]
    return f"{len(alive)} node(s) alive, " + ", ".join(f"{int(n['Resources'].get('CPU', 0))} CPU "
                                                       f"{int(n['Resources'].get('GPU', 0))} GPU" for n in alive)


def _drain(messages, board: ProgressBoard, empty) -> None:
    while True:
        try:
            message = messages.get_nowait()
        except empty:
            return
        board.update(message)


def _outcome(ray, ref, name: str, run_id: str, started: float, uri: str, path: str, interrupted: bool = False) -> dict:
    seconds = time.perf_counter() - started
    try:
        return ray.get(ref)
    except ray.exceptions.TaskCancelledError:
        mark_run(uri, path, run_id, "KILLED")
        return {"run": name, "status": "KILLED", "seconds": seconds, "message": "interrupted"}
    except ray.exceptions.RayTaskError as exc:  # the run's own error, raised on its node
        cause = exc.cause if isinstance(exc.cause, Exception) else exc
        status = "KILLED" if interrupted else "FAILED"
        mark_run(uri, path, run_id, status)
        return {"run": name, "status": status, "seconds": seconds, "message": f"{type(cause).__name__}: {cause}"}
    except ray.exceptions.RayError as exc:  # nodes lost more often than max_retries, the cluster gone
        mark_run(uri, path, run_id, "FAILED")
        return {"run": name, "status": "FAILED", "seconds": seconds,
                "message": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}


def _task(path: str, index: int, uri: str, run_id: str, run_dir: str, messages) -> dict:
    """One run, on whichever node Ray chose; its outcome as the runner's message dict."""
    import ray

    from mlgrpo.experiments.worker import execute_run

    context = ray.get_runtime_context()
    node, ip = context.get_node_id(), ray.util.get_node_ip_address()
    devices = [str(d) for d in context.get_accelerator_ids().get("GPU", [])]
    # placement.node is where the run last ran; one placement.ran_on.<node> tag per node it ever ran on
    tags = {"placement.node": node, "placement.node_ip": ip, "placement.devices": ",".join(devices) or "cpu",
            f"placement.ran_on.{node[:16]}": ip}
    name = Path(run_dir).name
    messages.put({"run": name, "note": f"on node {ip} ({node[:8]}), {'GPU ' + ','.join(devices) if devices else 'CPU'}"})
    if len(devices) > 1:
        from mlgrpo.experiments.ranks import launch_ranks

        log = Path(run_dir) / "worker.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        outcome = launch_ranks(path, index, uri, run_id, run_dir, len(devices), emit=messages.put, threads=1, log=log,
                               tags=tags)
    else:
        outcome = execute_run(path, index, uri, run_id, run_dir, emit=messages.put, threads=1, tags=tags)
    return {"run": outcome.run_name, "status": outcome.status, "seconds": outcome.seconds, "message": outcome.message,
            "eval_start": outcome.eval_start, "eval_end": outcome.eval_end}
