"""Which run goes on which devices: the GPUs of one machine split into groups of `run.gpus_per_run`, one
worker per group, the runs of the grid handed out in waves.

    visible GPUs ("0", "1", ... or CUDA_VISIBLE_DEVICES's entries) + gpus_per_run + runs
    -> groups of consecutive devices (a run with N > 1 GPUs is launched with N ranks on exactly its group)
    -> slots: (run, devices, wave), longest runs first, as the runner hands them out
    -> waves and the estimated wall time in run lengths

`place` is pure: it sees a device list, never torch, so that it is tested over device lists a CPU machine
does not have. A run that needs more GPUs than are visible, or more memory than the memory estimate says one
GPU has, is refused here, before anything starts. Without GPUs (an empty list, or gpus_per_run 0) workers
are CPU processes, one per core by default, as before. Knows nothing about MLflow or trainers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mlgrpo.errors import UserError

# A critic makes a PPO step about twice a GRPO step on the machines measured (runner.py sorts by it too).
RELATIVE_COST = {"ppo": 2.0}


@dataclass(frozen=True)
class Slot:
    run: str
    devices: tuple[str, ...]  # CUDA device ids as CUDA_VISIBLE_DEVICES names them; () on CPU
    worker: int  # which worker (device group) runs it
    wave: int  # 1-based: the runs of wave k start when a worker of wave k-1 is free


@dataclass(frozen=True)
class Placement:
    gpus: tuple[str, ...]  # the visible GPUs ((): a CPU machine)
    gpus_per_run: int  # 0: CPU workers
    workers: int  # processes running a run each at once
    slots: tuple[Slot, ...]  # in the order the runner starts them
    wall: float  # estimated wall time in GRPO-run lengths (a PPO run counts RELATIVE_COST["ppo"])

    @property
    def waves(self) -> int:
        return max((slot.wave for slot in self.slots), default=0)

    @property
    def idle(self) -> tuple[str, ...]:
        """Visible GPUs no worker uses (fewer runs than groups, or a remainder smaller than a group)."""
        used = {device for slot in self.slots for device in slot.devices}
        return tuple(device for device in self.gpus if device not in used)

    def lines(self) -> list[str]:
        """What `mlgrpo run --dry-run` and `validate` print."""
        where = (f"{len(self.gpus)} GPU(s) visible ({','.join(self.gpus)}), {self.gpus_per_run} per run"
                 if self.gpus_per_run else "CPU only: one process per worker")
        head = (f"placement: {len(self.slots)} run(s) in {self.workers} worker(s), {self.waves} wave(s); {where}; "
                f"estimated wall time {self.wall:g} run length(s) (a PPO run counted as "
                f"{RELATIVE_COST['ppo']:g} GRPO runs)")
        rows = [f"  wave {slot.wave}  {slot.run:<28} "
                + (f"GPU {','.join(slot.devices)}" + (f" ({len(slot.devices)} ranks)" if len(slot.devices) > 1 else "")
                   if slot.devices else f"worker {slot.worker}") for slot in self.slots]
        idle = [f"  idle GPU(s): {','.join(self.idle)}"] if self.idle and self.gpus_per_run else []
        return [head, *rows, *idle]


def visible_gpus(environ: Mapping[str, str] | None = None, count: int | None = None) -> tuple[str, ...]:
    """The GPUs this process may use, named as a child's CUDA_VISIBLE_DEVICES must name them: the entries of
    CUDA_VISIBLE_DEVICES when it is set (its ids are the machine's, not 0..n-1), else 0..count-1 (count:
    torch.cuda.device_count() when not given).

    >>> visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"})
    ('2', '3')
    >>> visible_gpus({"CUDA_VISIBLE_DEVICES": ""})
    ()
    >>> visible_gpus({}, count=2)
    ('0', '1')
    """
    environ = os.environ if environ is None else environ
    listed = environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        entries = [entry.strip() for entry in listed.split(",")]
        # CUDA stops at the first invalid entry; "-1" is the usual way to hide every GPU.
        kept = []
        for entry in entries:
            if not entry or entry.startswith("-"):
                break
            kept.append(entry)
        return tuple(kept)
    if count is None:
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return tuple(str(i) for i in range(count))


def resolve_gpus_per_run(setting: int | None, gpus: Sequence[str]) -> int:
    """run.gpus_per_run as used: None is 1 where GPUs are visible, else 0 (CPU workers).

    >>> resolve_gpus_per_run(None, ("0",)), resolve_gpus_per_run(None, ()), resolve_gpus_per_run(2, ("0", "1"))
    (1, 0, 2)
    """
    if setting is None:
        return 1 if gpus else 0
    return setting


def place(runs: Sequence[str], gpus: Sequence[str], gpus_per_run: int | None = None, *, workers: int | str = "auto",
          cpu_workers: int = 1, costs: Mapping[str, float] | None = None) -> Placement:
    """Runs (in the order the runner starts them) onto `gpus`, `gpus_per_run` each.

    workers: run.workers ("auto": one per device group on GPUs, `cpu_workers` on a CPU machine; a number caps
    it). costs: a run's length relative to a GRPO run (default 1), for the wall-time estimate.

    >>> p = place(["a", "b", "c"], ("0", "1"), 1)
    >>> [(s.run, s.devices, s.wave) for s in p.slots], p.waves, p.wall
    ([('a', ('0',), 1), ('b', ('1',), 1), ('c', ('0',), 2)], 2, 2.0)
    """
    gpus = tuple(gpus)
    per_run = resolve_gpus_per_run(gpus_per_run, gpus)
    if per_run < 0:
        raise UserError(f"run.gpus_per_run must be >= 0, got {per_run}")
    if per_run > len(gpus):
        seen = f"{len(gpus)} GPU(s) ({','.join(gpus)})" if gpus else "no GPU"
        raise UserError(f"run.gpus_per_run is {per_run} but this machine shows {seen}: lower run.gpus_per_run, "
                        "set CUDA_VISIBLE_DEVICES to more GPUs, or run on a larger machine (run.backend: ray)")
    groups: list[tuple[str, ...]] = ([tuple(gpus[i:i + per_run]) for i in range(0, len(gpus) - per_run + 1, per_run)]
                                     if per_run else [() for _ in range(max(1, cpu_workers))])
    if workers != "auto":
        if not isinstance(workers, int) or workers < 1:
            raise UserError(f"run.workers must be 'auto' or an integer >= 1, got {workers!r}")
        if per_run:  # more workers than device groups would put two runs on one GPU
            groups = groups[:workers]
        else:
            groups = [() for _ in range(workers)]
    groups = groups[:max(1, len(runs))]
    costs = costs or {}
    # List scheduling as the runner does it: the next run goes to the worker that frees first.
    free_at = [0.0] * len(groups)
    wave_of = [0] * len(groups)
    slots = []
    for run in runs:
        worker = min(range(len(groups)), key=lambda w: (free_at[w], w))
        wave_of[worker] += 1
        free_at[worker] += float(costs.get(run, 1.0))
        slots.append(Slot(run, groups[worker], worker, wave_of[worker]))
    return Placement(gpus, per_run, len(groups), tuple(slots), max(free_at, default=0.0))


def check_memory(peaks: Mapping[str, float], gpu_bytes: float, device: str = "a GPU") -> None:
    """Refuse before anything starts when an arm's estimated peak (bytes, experiments/memory.py) exceeds what
    one GPU has: with data-parallel ranks every GPU holds a whole copy, so more GPUs per run do not help.

    >>> check_memory({"grpo": 1e9}, 80e9)
    """
    too_big = {arm: peak for arm, peak in peaks.items() if peak > gpu_bytes}
    if too_big:
        arm, peak = max(too_big.items(), key=lambda item: item[1])
        raise UserError(f"arm {arm!r} needs about {peak / 2**30:.1f} GiB by validate's estimate, more than the "
                        f"{gpu_bytes / 2**30:.1f} GiB of {device}: nothing started; use LoRA (model.lora), a smaller "
                        "per_device_train_batch_size, or a larger GPU")


def cuda_env(devices: Sequence[str]) -> dict[str, str]:
    """The environment that pins a worker to its devices (nothing on CPU: it sees what its parent sees).

    >>> cuda_env(("2", "3")), cuda_env(())
    ({'CUDA_VISIBLE_DEVICES': '2,3'}, {})
    """
    return {"CUDA_VISIBLE_DEVICES": ",".join(devices)} if devices else {}


def run_costs(runs) -> dict[str, float]:
    """{run name: length relative to a GRPO run} for RunSpecs."""
    return {run.run_name: RELATIVE_COST.get(run.algorithm.name, 1.0) for run in runs}

