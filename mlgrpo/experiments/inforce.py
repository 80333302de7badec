"""The settings in force that decide whether a run can learn, defaults included, and the learning-rate check.

Every run on the real model before issue 26 moved nothing for reasons no file showed: the learning rate
decayed linearly to 0 over 12 steps (transformers' default schedule), LoRA covered q/v only (peft's
default for the model), rollouts were sampled at TRL's default temperature, and group-std scaling turned
chrF's 0.01-0.06 spread into +-1 advantages. `mlgrpo validate` prints these from what each arm trains with
(the effective view, experiments/effective.py), and warns when the schedule leaves the run almost no
learning rate. Pure, except that the schedule is computed with transformers' own scheduler functions.
Knows nothing about YAML files, trainers' internals or MLflow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mlgrpo.experiments.diff import ABSENT, canonical, get_path, show

# (label, path in an arm's effective view): the defaults that decided the outcome of past runs.
KEY_SETTINGS = (
    ("model.dtype", ("model", "dtype")),
    ("model.tokenizer", ("model", "tokenizer")),
    ("model.lora", ("model", "lora")),
    ("learning_rate", ("training", "learning_rate")),
    ("lr_scheduler_type", ("training", "lr_scheduler_type")),
    ("warmup_steps", ("training", "warmup_steps")),
    ("max_steps", ("training", "max_steps")),
    ("optim", ("training", "optim")),
    ("max_grad_norm", ("training", "max_grad_norm")),
    ("bf16", ("training", "bf16")),
    ("fp16", ("training", "fp16")),
    ("num_generations", ("training", "num_generations")),
    ("temperature", ("training", "temperature")),
    ("top_p", ("training", "top_p")),
    ("max_completion_length", ("training", "max_completion_length")),
    ("loss_type", ("training", "loss_type")),
    ("epsilon", ("training", "epsilon")),
    ("std_scope", ("algorithm", "advantage", "std_scope")),
    ("reward_control", ("rewards", "control")),
)
# Schedules transformers builds from (optimizer, warm-up, total steps) alone; the others need an evaluation loop.
COMPUTABLE = ("linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup",
              "inverse_sqrt", "cosine_with_min_lr", "cosine_warmup_with_min_lr", "warmup_stable_decay")
# A schedule that falls below this share of learning_rate ...
NEAR_ZERO = 0.1
# ... within this many optimiser steps leaves a short RL run too little learning rate to move (issue 26: linear
# decay over 12 steps, about 6 steps' worth of learning rate). Runs that decay over hundreds of steps (the
# shipped 200- and 250-step files, cosine over thousands in published recipes) are the usual practice.
SHORT_RUN = 50


def lora_text(lora: Mapping | None, default_targets: str) -> str:
    """model.lora for people: "none (full fine-tuning)" or "r=8, alpha 16, targets q_proj, v_proj".

    >>> lora_text({"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]}, "?")
    'r=8, alpha 16, dropout 0.0, targets q_proj, v_proj'
    >>> lora_text({"r": 4}, "peft's default for the model")
    "r=4, alpha 8, dropout 0.0, targets peft's default for the model"
    """
    if not lora:
        return "none (full fine-tuning)"
    targets = lora.get("target_modules")
    targets = default_targets if targets is None else targets if isinstance(targets, str) else ", ".join(targets)
    return (f"r={lora.get('r', 8)}, alpha {lora.get('lora_alpha', 8)}, dropout {float(lora.get('lora_dropout', 0.0))}, "
            f"targets {targets}")


def arm_settings(effective: Mapping, model, default_targets: str) -> dict[str, str]:
    """{label: value as text} of one arm's KEY_SETTINGS."""
    view = {**effective, "model": {"dtype": model.dtype, "tokenizer": model.tokenizer or "the policy's own",
                                   "lora": lora_text(effective["model"]["lora"], default_targets)}}
    out = {}
    for label, path in KEY_SETTINGS:
        value = get_path(view, path)
        out[label] = "none" if value is ABSENT and label == "reward_control" else show(value)
    return out


def settings_in_force(experiment, default_targets: str = "peft's default for the model") -> list[tuple[str, str]]:
    """(label, value) per key setting: the value all arms share, or "differs: arm=value, ..."."""
    per_arm = {arm: arm_settings(experiment.arm_configs[arm].effective, experiment.model, default_targets)
               for arm in experiment.arms}
    rows = []
    for label, _ in KEY_SETTINGS:
        values = {arm: settings[label] for arm, settings in per_arm.items()}
        if len({canonical(v) for v in values.values()}) == 1:
            rows.append((label, next(iter(values.values()))))
        else:
            rows.append((label, "differs: " + ", ".join(f"{arm}={v}" for arm, v in values.items())))
    return rows


def lr_multipliers(training: Mapping[str, Any]) -> list[float] | None:
    """The learning rate of every optimiser step as a share of learning_rate, from transformers' own scheduler;
    None when max_steps is not set or the schedule needs an evaluation loop."""
    steps = training.get("max_steps", -1)
    kind = str(training.get("lr_scheduler_type", "linear")).removeprefix("SchedulerType.")
    if not steps or steps < 1 or kind not in COMPUTABLE:
        return None
    import torch
    from transformers import get_scheduler

    warmup = training.get("warmup_steps") or 0
    warmup = int(warmup) if warmup >= 1 else math.ceil(steps * warmup)  # TrainingArguments.get_warmup_steps
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    scheduler = get_scheduler(kind, optimizer, num_warmup_steps=warmup, num_training_steps=steps,
                              scheduler_specific_kwargs=training.get("lr_scheduler_kwargs") or None)
    out = []
    for _ in range(steps):
        out.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return out


def learning_rate_warning(arm: str, training: Mapping[str, Any]) -> str | None:
    """A warning when the schedule falls below NEAR_ZERO of learning_rate within the first SHORT_RUN steps.

    Hand-worked, linear, no warm-up, 12 steps: optimiser step k (1-based) trains at (13 - k) / 12, below 0.1
    at step 12 (1/12 = 0.083); the mean over the run is (12 + 11 + ... + 1) / 144 = 78 / 144 = 0.54.
    """
    multipliers = lr_multipliers(training)
    if multipliers is None:
        return None
    peak = max(multipliers)
    low = next((k for k, m in enumerate(multipliers) if m < NEAR_ZERO * peak and k >= multipliers.index(peak)), None)
    if low is None or low >= SHORT_RUN:
        return None
    kind = str(training.get("lr_scheduler_type", "linear")).removeprefix("SchedulerType.")
    mean = sum(multipliers) / len(multipliers) / peak
    return (f"arm {arm!r}: lr_scheduler_type {kind} brings the learning rate below {NEAR_ZERO:.0%} of its peak by "
            f"step {low + 1} of {len(multipliers)} (mean {mean:.0%} of the peak over the run): a short run barely "
            "moves; set training.lr_scheduler_type: constant_with_warmup (and warmup_steps), or run longer")
