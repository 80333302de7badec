"""Each arm's estimated peak memory (trainers/memory.py's model) for an experiment, and whether the runs that
`mlgrpo run` would start at once fit the device this machine has.

    the policy's config (models/shape, no weights read) -> parameter counts with the arm's LoRA
    -> the arm's GRPOConfig (batch, rollout, completion length) and KL -> the longest prompt in tokens
    -> trainers.memory.estimate with the fitted coefficients -> one line per arm, and warnings

The device is the first GPU (its total memory) when CUDA is available, else the CPU (memory available now).
Knows nothing about MLflow; loads no weights.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from mlgrpo.trainers.memory import Coefficients, Fit, Workload, estimate, load_fit, terms

GIB = 2**30
EVAL_COPY_LIMIT = 1_000_000_000  # the worker's held-out KL reference is kept below this many parameters


@dataclass(frozen=True)
class ArmEstimate:
    arm: str
    peak: float  # bytes
    terms: dict[str, float]


@dataclass(frozen=True)
class MemoryPlan:
    device: str  # "cpu" or "cuda:0 (NVIDIA H200)"
    available: float  # bytes: free RAM now on a CPU, total memory on a GPU
    concurrent: int  # runs that mlgrpo run starts at once on this machine
    fit: Fit
    arms: list[ArmEstimate] = field(default_factory=list)
    note: str = ""  # how prompt lengths were counted
    warnings: list[str] = field(default_factory=list)


def plan_memory(experiment) -> MemoryPlan | str:
    """The estimates of every arm, or a sentence saying why there are none."""
    from mlgrpo.models.shape import architecture, count

    fit = load_fit()
    if fit is None:
        return "no memory model fitted yet (python -m bench.bench_scale fits one)"
    arch = architecture(experiment.model.policy)
    if arch is None:
        return (f"no estimate: the architecture of {experiment.model.policy!r} is not on this machine yet (a hub "
                "model not in the cache, or a GGUF file not converted)")
    device, available, coef = _device(fit)
    runs = {run.arm: run for run in experiment.plan() if run.seed == experiment.seeds[0]}
    prompt_tokens, note = _longest_prompt(experiment, arch.tokenizer_folder)
    weight_bytes = _weight_bytes(arch.config, experiment.model.dtype)
    plan = MemoryPlan(device, available, _concurrent(experiment, device), fit, note=note)
    ranks = max(1, experiment.run_settings.gpus_per_run or 1)
    sharded: dict[str, str] = {}  # arm -> the states its engine splits over the ranks
    for arm, run in runs.items():
        shape = count(arch.config, run.model.lora)
        work = _workload(run, shape.parameters, weight_bytes, prompt_tokens, ranks)
        plan.arms.append(ArmEstimate(arm, estimate(shape, work, coef), terms(shape, work, coef)))
        if work.sharded:
            sharded[arm] = ", ".join(work.sharded)
    if sharded:
        notes = [plan.note] if plan.note else []
        notes += [f"per rank of {ranks} (run.gpus_per_run): {arm}'s {states} sharded" for arm, states in sharded.items()]
        plan = dataclasses.replace(plan, note="; ".join(notes))
    _warn(plan)
    return plan


def _workload(run, parameters: int, weight_bytes: int, prompt_tokens: int, ranks: int = 1) -> Workload:
    """What `run` holds on each of its `ranks` (run.gpus_per_run): FSDP or ZeRO split some states over them."""
    from mlgrpo.experiments.training import grpo_config
    from mlgrpo.trainers.sharding import sharded_states

    args = grpo_config(run, "/nonexistent-memory-estimate")  # nothing is written: GRPOConfig only reads it
    lora = bool(run.model.lora)
    sharded = sharded_states(run.training) if ranks > 1 else ()
    return Workload(
        algorithm=run.algorithm.name,
        critic=run.algorithm.ppo.value_model if run.algorithm.name == "ppo" else None,
        weight_bytes=weight_bytes,
        rollout=args.per_device_train_batch_size * args.steps_per_generation,
        micro_batch=args.per_device_train_batch_size,
        prompt_tokens=prompt_tokens,
        completion_tokens=args.max_completion_length,
        reference=run.kl.coef > 0 and not lora,
        eval_copy=not lora and parameters <= EVAL_COPY_LIMIT,
        shards=ranks if sharded else 1,
        sharded=sharded,
        reference_sharded=True,  # TRL's reference model and PPO's KL reference are prepared like the policy
    )


def _device(fit: Fit) -> tuple[str, float, Coefficients]:
    import torch

    if torch.cuda.is_available():
        total = torch.cuda.get_device_properties(0).total_memory
        return f"cuda:0 ({torch.cuda.get_device_name(0)})", float(total), fit.gpu()
    return "cpu", float(_available_ram()), fit.cpu


def _available_ram() -> int:
    """MemAvailable from /proc/meminfo (what can be allocated without swapping), else total RAM."""
    import os

    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _concurrent(experiment, device: str) -> int:
    from mlgrpo.experiments.runner import worker_count

    runs = len(experiment.arms) * len(experiment.seeds)
    return 1 if device != "cpu" else worker_count(experiment.run_settings.workers, runs)


def _weight_bytes(config, dtype: str = "auto") -> int:
    """Bytes per weight as the worker loads them: model.dtype, or the checkpoint's own when it is "auto"."""
    name = dtype if dtype != "auto" else str(getattr(config, "dtype", None) or "float32").removeprefix("torch.")
    return 2 if name in ("bfloat16", "float16") else 4


def _longest_prompt(experiment, tokenizer_folder: str | None) -> tuple[int, str]:
    """The longest train prompt in tokens (batches are padded to their longest): with the policy's tokenizer
    when it is on disk, else in UTF-8 bytes, an upper bound for byte-level tokenizers."""
    from mlgrpo.experiments.data import load_run_data

    train, _ = load_run_data(experiment.data, experiment.seeds[0], eval_per_language=1)
    prompts = [r["prompt"] for r in train if isinstance(r["prompt"], str)]
    if not prompts:
        return 0, "chat prompts: their length is not counted"
    if tokenizer_folder is None:
        return max(len(p.encode("utf-8")) for p in prompts), "prompt lengths in bytes (the tokenizer is not built yet)"
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    return max(len(ids) for ids in tokenizer(prompts)["input_ids"]), ""


def _warn(plan: MemoryPlan) -> None:
    at_once = plan.concurrent
    for arm in plan.arms:
        if arm.peak > plan.available:
            plan.warnings.append(f"arm {arm.arm!r} needs about {arm.peak / GIB:.1f} GiB, more than the "
                                 f"{plan.available / GIB:.1f} GiB of {plan.device}: use LoRA (model.lora), a smaller "
                                 "per_device_train_batch_size, or a larger device")
    if at_once > 1:
        biggest = sorted((a.peak for a in plan.arms), reverse=True)[:at_once]
        if sum(biggest) > plan.available and all(a.peak <= plan.available for a in plan.arms):
            plan.warnings.append(f"{at_once} runs at once (run.workers) may need {sum(biggest) / GIB:.1f} GiB, more "
                                 f"than the {plan.available / GIB:.1f} GiB available: set run.workers: 1")


def summary(plan: MemoryPlan) -> tuple[str, list[str], list[list[str]], list[str]]:
    """(title, table header, rows, footnotes) for validate to print."""
    fit = plan.fit
    where = "total" if plan.device != "cpu" else "available now"
    title = (f"estimated peak memory per run on {plan.device} ({plan.available / GIB:.1f} GiB {where}; "
             f"{plan.concurrent} run(s) at once):")
    header = ["arm", "peak", *SHOWN]
    rows = [[a.arm, gib(a.peak), *(gib(a.terms[k]) for k in SHOWN)] for a in plan.arms]
    notes = [f"memory model fitted to {fit.points} measured runs ({fit.command}, {fit.date}): median error "
             f"{100 * fit.median_error:.0f}%, max {100 * fit.max_error:.0f}%, max {100 * fit.cross_validated_max_error:.0f}% "
             "on a model size left out of the fit (reports/benchmarks.md)"]
    return title, header, rows, notes + ([plan.note] if plan.note else [])


SHOWN = ("weights", "gradients", "optimizer", "critic", "frozen_copies", "activations", "transients")


def gib(value: float) -> str:
    return f"{value / GIB:.2f} GiB" if value >= GIB / 10 else f"{value / 2**20:.0f} MiB"
