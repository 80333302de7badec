"""The `training` section (any trl.GRPOConfig field) and `model.lora` (peft.LoraConfig fields), checked
against the libraries themselves, and `grpo_config`, which turns a run into the GRPOConfig it trains with.

    names (dataclasses.fields(GRPOConfig), closest match for typos) -> kinds (fields.coerce)
    -> what TRL leaves unchecked or reports late (group size, batch layout with the update schedule, loss_type)
    -> trl_settings: + the update schedule (steps_per_generation, num_iterations) and the KL (beta)
    -> GRPOConfig(**settings) itself, so that TRL's own __post_init__ validation applies

Fields the platform sets (output_dir, seed, report_to, run_name, checkpoints, reward weights ...) are
refused with the reason, rather than silently overwritten. trl and peft are imported when a function
needs them, never at import time. Knows nothing about YAML files, line numbers, data or MLflow.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
import re
import typing
import warnings
from collections.abc import Mapping
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.experiments.fields import check_mapping, closest, coerce
from mlgrpo.experiments.source import ConfigError

# GRPOConfig fields an experiment may not set, and why.
PLATFORM_FIELDS = {
    "output_dir": "each run writes under run.output_dir/<arm>-seed<seed>",
    "seed": "every run's seed comes from `seeds:`, so that every arm gets the same seeds",
    "data_seed": "the data order follows each run's seed, the same for every arm",
    "report_to": "metrics go to MLflow through the tracking section",
    "run_name": "runs are named <arm>-seed<seed>",
    "logging_dir": "logs go to MLflow through the tracking section",
    "reward_weights": "each reward's weight is set in rewards (weight:)",
    "scale_rewards": "advantages come from algorithm.advantage: set algorithm.advantage.std_scope "
                     "(group, language, batch or none)",
    "save_strategy": "checkpoints are set by run.checkpoint_every",
    "save_steps": "checkpoints are set by run.checkpoint_every",
    "save_total_limit": "checkpoints are set by run.checkpoint_every",
    "resume_from_checkpoint": "an interrupted run resumes from its own last checkpoint",
    "eval_strategy": "held-out evaluation is set in the evaluation section",
    "eval_steps": "held-out evaluation is set in the evaluation section",
    "beta": "the KL to the reference is the kl section (kl.coef, kl.estimator), the same for every arm unless an "
            "arm declares its own; it goes into TRL's loss (beta) or PPO's reward as each algorithm needs",
    "steps_per_generation": "the update schedule is the update section (update.minibatches: optimiser steps per "
                            "rollout), the same for every arm",
    "generation_batch_size": "a rollout is update.minibatches x per_device_train_batch_size x "
                             "gradient_accumulation_steps completions (the update section)",
    "num_iterations": "passes over each rollout are update.epochs (the update section)",
    "multi_objective_aggregation": "advantages come from algorithm.advantage: for a baseline per reward function "
                                   "(TRL's normalize_then_sum) set algorithm.advantage.objective_weights",
}
# LoraConfig fields the platform sets (or that describe a saved adapter, not a new one).
LORA_PLATFORM_FIELDS = {
    "task_type": "the platform trains causal language models (task_type CAUSAL_LM)",
    "peft_type": "it is LoRA by construction",
    "base_model_name_or_path": "the base model is model.policy",
    "revision": "the base model is model.policy",
    "inference_mode": "the adapter is trained",
    "auto_mapping": "set by peft when saving",
    "peft_version": "set by peft when saving",
}
# trl 1.16's documented loss types and importance-sampling levels: GRPOConfig accepts any text for
# them and the trainer fails only when it first computes a loss.
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")
UNCHECKED_CHOICES = {"loss_type": LOSS_TYPES, "importance_sampling_level": IMPORTANCE_SAMPLING_LEVELS}


@functools.cache
def _fields(kind: str) -> dict[str, tuple[Any, Any, tuple]]:
    """name -> (annotation, default, choices) of GRPOConfig ("trl") or LoraConfig ("peft")."""
    if kind == "trl":
        from trl import GRPOConfig as cls
    else:
        from peft import LoraConfig as cls
    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation that cannot be resolved: check the resolvable ones
        hints = {}
    out = {}
    for f in dataclasses.fields(cls):
        if f.init:
            annotation = hints.get(f.name, f.type if not isinstance(f.type, str) else Any)
            default = f.default if f.default is not dataclasses.MISSING else None
            out[f.name] = (annotation, default, tuple(f.metadata.get("choices", ())))
    return out


def _check_names(raw: Mapping, valid: Mapping, platform: Mapping[str, str], path: tuple, what: str) -> None:
    for key in raw:
        if key in platform:
            raise ConfigError((*path, key), f"{key} is set by the platform: {platform[key]}")
        if key not in valid:
            raise ConfigError((*path, key), f"unknown {what} field {key!r}{closest(key, valid)}")


def check_training(raw: Any, path: tuple = ("training",), minibatches: int = 1) -> dict[str, Any]:
    """The training settings, checked and in canonical form (GRPOConfig keyword arguments); `minibatches`
    is the update schedule's (a rollout holds that many minibatches)."""
    check_mapping(raw, path)
    fields = _fields("trl")
    _check_names(raw, fields, PLATFORM_FIELDS, path, "trl.GRPOConfig")
    settings = {key: coerce(value, fields[key][0], (*path, key)) for key, value in raw.items()}
    for key, value in settings.items():
        choices = fields[key][2] or UNCHECKED_CHOICES.get(key)
        if choices and value is not None and value not in choices:
            raise ConfigError((*path, key), f"{value!r} is not one of {', '.join(map(str, choices))}"
                                            f"{closest(value, map(str, choices))}")
    if settings.get("use_vllm") and importlib.util.find_spec("vllm") is None:
        raise ConfigError((*path, "use_vllm"), "vllm is not installed; install it or set use_vllm: false")
    if settings.get("deepspeed") and importlib.util.find_spec("deepspeed") is None:  # transformers' error is a traceback
        raise ConfigError((*path, "deepspeed"), "deepspeed is not installed; install it (pip install deepspeed) or "
                                                "remove training.deepspeed")
    check_group_layout(settings, path, minibatches)
    return settings


def check_group_layout(settings: Mapping[str, Any], path: tuple = ("training",), minibatches: int = 1) -> None:
    """Group size >= 2, and every generation batch made of whole groups (TRL's defaults fill the gaps).

    A generation batch (a rollout) is per_device_train_batch_size x steps_per_generation completions per
    process; steps_per_generation is `minibatches` x gradient_accumulation_steps unless given.
    Hand-worked: batch 60, G 8 -> 60 % 8 = 4 completions of a 9th prompt's group would spill into the
    next batch; the nearest layouts are 56 (7 prompts) and 64 (8 prompts).
    """
    fields = _fields("trl")

    def get(name: str) -> Any:
        return settings.get(name, fields[name][1])

    group = get("num_generations")
    if group is None or group < 2:
        raise ConfigError((*path, "num_generations"), f"the group size must be at least 2, got {group}: group-relative "
                          "advantages compare completions of one prompt, and a group of one has nothing to compare")
    batch = get("per_device_train_batch_size")
    steps = get("steps_per_generation") or minibatches * get("gradient_accumulation_steps")
    if batch < 1 or steps < 1:
        raise ConfigError((*path, "per_device_train_batch_size"), f"batch {batch} x steps {steps} must be at least 1")
    generation = get("generation_batch_size")
    if generation is not None and generation % group:
        raise ConfigError((*path, "generation_batch_size"), f"generation_batch_size {generation} is not a multiple of "
                          f"num_generations {group}: {_nearest(generation, group)}")
    if (batch * steps) % group:
        raise ConfigError((*path, "per_device_train_batch_size"),
                          f"per_device_train_batch_size {batch} x {steps} micro-batches per rollout = {batch * steps} "
                          f"completions is not a multiple of num_generations {group}, so a prompt's group would be "
                          f"split between rollouts; {_nearest_batch(batch, steps, group)}")


def check_group_schedule(settings: Mapping[str, Any], update, algorithm, sampler,
                         path: tuple = ("update", "group_schedule")) -> None:
    """Every size of update.group_schedule holds whole groups in a rollout of this layout (as check_group_layout
    does for num_generations), and the arm has nothing that fixes the group size (group_schedule_conflict)."""
    if not update.group_schedule:
        return
    from mlgrpo.sampling.group_schedule import check_schedule
    from mlgrpo.trainers.config import group_schedule_conflict

    fields = _fields("trl")

    def get(name: str) -> Any:
        return settings.get(name, fields[name][1])

    batch = get("per_device_train_batch_size")
    steps = get("steps_per_generation") or update.minibatches * get("gradient_accumulation_steps")
    where = f"a rollout (per_device_train_batch_size {batch} x {steps} micro-batches)"
    try:
        check_schedule(update.group_schedule, get("num_generations"), {where: batch * steps})
    except UserError as exc:
        match = re.match(r"group_schedule\[(\d+)\]: ", str(exc))
        raise ConfigError((*path, int(match[1])), str(exc)[match.end():]) from None
    conflict = group_schedule_conflict(algorithm, sampler)
    if conflict is not None:
        raise ConfigError(path, f"a group-size schedule cannot be combined with {conflict} yet; remove one of them")


def _nearest(total: int, group: int) -> str:
    low, high = total // group * group, (total // group + 1) * group
    options = [f"{n} ({n // group} prompts)" for n in (low, high) if n > 0]
    return "use " + " or ".join(options)


def _nearest_batch(batch: int, steps: int, group: int) -> str:
    """The per_device_train_batch_size values next to `batch` whose rollouts hold whole groups.

    Hand-worked: batch 62, 4 micro-batches, G 16: a batch must be a multiple of 16 / gcd(16, 4) = 4,
    so 60 (240 completions, 15 prompts) or 64 (16 prompts).
    """
    unit = group // math.gcd(group, steps)
    low, high = batch // unit * unit, (batch // unit + 1) * unit
    options = [f"{b} ({b * steps // group} prompts per rollout)" for b in (low, high) if b > 0]
    return "use per_device_train_batch_size " + " or ".join(options)


def check_lora(raw: Any, path: tuple = ("model", "lora")) -> dict[str, Any] | None:
    """LoRA settings checked against peft.LoraConfig (kinds, ranges, then LoraConfig itself)."""
    if raw is None:
        return None
    check_mapping(raw, path)
    fields = _fields("peft")
    _check_names(raw, fields, LORA_PLATFORM_FIELDS, path, "peft.LoraConfig")
    lora = {key: coerce(value, fields[key][0], (*path, key)) for key, value in raw.items()}
    ranges = {"r": (lambda v: v >= 1, "must be >= 1 (the adapter's rank)"),
              "lora_alpha": (lambda v: v > 0, "must be > 0 (the update is scaled by lora_alpha / r)"),
              "lora_dropout": (lambda v: 0 <= v < 1, "must be in [0, 1)")}
    for key, (ok, reason) in ranges.items():
        if key in lora and not ok(lora[key]):
            raise ConfigError((*path, key), f"{reason}, got {lora[key]}")
    from peft import LoraConfig

    try:
        LoraConfig(task_type="CAUSAL_LM", **lora)
    except (ValueError, TypeError) as exc:
        raise ConfigError(path, f"peft.LoraConfig refuses these settings: {exc}") from None
    return lora


def build_grpo_config(settings: Mapping[str, Any], output_dir: str, *, seed: int, run_name: str, **forced: Any):
    """trl.GRPOConfig from checked settings, with the platform's fields; `forced` wins over both.

    Without CUDA: use_cpu, and bf16 off unless the settings ask for it (TRL turns it on when unset; on a CPU
    that is autocast several times slower than fp32, issue 26). `bf16: true` is honoured there (CPU autocast);
    `fp16: true` is refused, as it cannot run without CUDA. Nothing set is dropped. Checkpoints are off unless
    `forced` asks for them.
    """
    import torch
    from trl import GRPOConfig

    kwargs = {"save_strategy": "no", **settings, "output_dir": output_dir, "seed": seed, "report_to": "none",
              "run_name": run_name}
    if not torch.cuda.is_available():
        if settings.get("fp16"):
            raise UserError("fp16: true needs a CUDA GPU (fp16 mixed precision), and this machine has none; set "
                            "bf16: true instead (it runs on CPU, slower than fp32) or remove fp16")
        kwargs.update(use_cpu=True, bf16=bool(settings.get("bf16")), fp16=False)
    kwargs.update(forced)
    with warnings.catch_warnings():
        # transformers 5 renamed gradient_checkpointing; TRL 1.16 still reads the old name on its own.
        warnings.filterwarnings("ignore", message="`gradient_checkpointing` is deprecated", category=FutureWarning)
        try:
            return GRPOConfig(**kwargs)
        except (ValueError, TypeError, OverflowError) as exc:
            raise UserError(f"trl.GRPOConfig refuses these settings: {exc}") from None


def trl_settings(training: Mapping[str, Any], update, kl, algorithm: str) -> dict[str, Any]:
    """GRPOConfig keyword arguments of an arm: its training settings, the update schedule's
    steps_per_generation and num_iterations (UpdateSchedule.trl_fields), and beta: the KL coefficient when
    the arm's KL sits in TRL's loss, 0 when it sits in PPO's reward or is off (KLConfig.trl_beta)."""
    accumulation = training.get("gradient_accumulation_steps", _fields("trl")["gradient_accumulation_steps"][1])
    return {**training, **update.trl_fields(accumulation), "beta": kl.trl_beta(algorithm)}


def grpo_config(run, output_dir: str, **forced: Any):
    """The GRPOConfig of `run` (a RunSpec): its training settings, update schedule and KL, its seed and name,
    and `forced`."""
    settings = trl_settings(run.training, run.update, run.kl, run.algorithm.name)
    return build_grpo_config(settings, output_dir, seed=run.seed, run_name=run.run_name, **forced)


def check_ppo_engine(settings: Mapping[str, Any], algorithm, ranks: int = 1) -> None:
    """A PPO arm whose training settings ask for an engine its critic cannot train under (trainers/sharding.py
    says why), refused at the key that asks for it; `ranks` per run (run.gpus_per_run)."""
    if algorithm.name != "ppo":
        return
    from mlgrpo.trainers.sharding import DEEPSPEED, FSDP1, ppo_refusal, training_engine

    engine = training_engine(settings)
    problem = ppo_refusal(engine, algorithm.ppo.value_model, ranks)
    if problem:
        key = {DEEPSPEED: ("training", "deepspeed"), FSDP1: ("training", "fsdp_config")}.get(engine)
        raise ConfigError(key or ("algorithm", "ppo", "value_model"), problem)
