"""What an arm trains with, defaults included: the view that `mlgrpo validate` and the report compare.

The resolved config holds what the YAML says with mlgrpo's dataclass defaults filled in; two arms can
still differ in what they do without one key of it differing (PPO's critic and its KL placement are
defaults; TRL's own defaults never appear). The effective view states, per arm:

    algorithm   name and advantage settings, std_scope as in force (the estimator's convention if unset),
                and dynamic sampling ("off", or its rounds and tolerance)
    critic      "none", or the critic PPO trains (model, learning rate, value clip, grad clip, warm-up)
    kl          "off", or {coef, estimator, placement: reward | loss} as the trainer applies it
    update      the schedule in completions and optimiser steps (per process), the group size (and prompts
                per rollout) with the group schedule's switches where they take effect, and whether the
                policy ratio can leave 1 within a rollout
    sampler     mlgrpo's language sampler settings, or TRL's RepeatSampler
    rewards, model.lora
    training    every trl.GRPOConfig field the step reads (GRPO's own fields and the optimiser's), from the
                GRPOConfig the arm trains with, so TRL's defaults and mlgrpo's derived fields are in it

Pure: built from the typed configs and a GRPOConfig; knows nothing about YAML files or MLflow.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from mlgrpo.experiments.fields import to_plain

# TrainingArguments fields that change the optimisation (the rest are bookkeeping: logging, saving, hub).
OPTIMISER_FIELDS = ("learning_rate", "lr_scheduler_type", "lr_scheduler_kwargs", "warmup_steps", "warmup_ratio",
                    "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "optim", "max_grad_norm",
                    "per_device_train_batch_size", "gradient_accumulation_steps", "max_steps", "num_train_epochs",
                    "bf16", "fp16", "activation_checkpointing", "gradient_checkpointing", "use_cpu")
# GRPOConfig's own fields that say how something is logged or reached, not what is trained; and the ones
# mlgrpo sets elsewhere (reward weights: the rewards section) or refuses.
NOT_TRAINING = ("log_", "num_completions_to_print", "vllm_server_", "vllm_group_port", "reward_weights",
                "scale_rewards", "multi_objective_aggregation")
TRL_SAMPLER = "trl RepeatSampler (the rows in a random order)"


@functools.cache
def training_fields() -> tuple[str, ...]:
    """The GRPOConfig fields of the effective view, in GRPOConfig's order."""
    from transformers import TrainingArguments
    from trl import GRPOConfig

    inherited = {f.name for f in dataclasses.fields(TrainingArguments)}
    names = [f.name for f in dataclasses.fields(GRPOConfig) if f.init]
    own = [n for n in names if n not in inherited and not n.startswith(NOT_TRAINING)]
    return tuple([n for n in OPTIMISER_FIELDS if n in names] + own)


def effective_view(algorithm, kl, update, sampler, rewards, lora, grpo_args) -> dict[str, Any]:
    """The arm's effective settings as a nested dict (see the module docstring)."""
    args = grpo_args.to_dict()
    advantage = to_plain(algorithm.advantage)
    advantage["std_scope"] = algorithm.advantage.scale_scope
    method = {"name": algorithm.name, "advantage": advantage, "dynamic_sampling": _dynamic(algorithm)}
    if algorithm.name == "sft":  # no rollouts, no advantages (the rest of the block is unused): its target and budget
        advantage.update(estimator="none", std_scope="none")
        method["sft"] = to_plain(algorithm.sft)
    view = {
        "algorithm": method,
        "critic": _critic(algorithm),
        "kl": _kl(kl, algorithm.name),
        "update": update_view(update, args),
        "sampler": TRL_SAMPLER if sampler is None else {k: v for k, v in to_plain(sampler).items() if k != "seed"},
        "rewards": to_plain(rewards),
        "model": {"lora": lora},
        "training": {name: to_plain(args[name]) for name in training_fields() if name in args},
    }
    if algorithm.name == "sft":
        view["update"]["policy_ratio"] = "none (SFT trains on the references)"
    return view


def _dynamic(algorithm) -> Any:
    dynamic = algorithm.dynamic_sampling
    return {"max_rounds": dynamic.max_rounds, "tolerance": dynamic.tolerance} if dynamic.enabled else "off"


def _critic(algorithm) -> Any:
    if algorithm.name != "ppo":
        return "none"
    ppo = algorithm.ppo
    out = {"model": ppo.value_model, "cliprange_value": ppo.cliprange_value, "warmup_steps": ppo.warmup_steps}
    if ppo.value_model in ("separate", "lora"):  # its own AdamW and clip; a head learns through the policy's loss
        out.update(learning_rate=ppo.value_learning_rate, max_grad_norm=ppo.max_grad_norm)
    else:
        out["vf_coef"] = ppo.vf_coef
    return out


def _kl(kl, algorithm: str) -> Any:
    where = kl.placed(algorithm)
    return "off" if where == "off" else {"coef": kl.coef, "estimator": kl.estimator, "placement": where}


def update_view(update, args: dict) -> dict[str, Any]:
    """The schedule as the trainer runs it, per process: completions per optimiser step (minibatch) and
    per rollout, prompts per rollout, optimiser steps per rollout, and whether the policy ratio moves."""
    from mlgrpo.sampling.group_schedule import switches_in_force

    minibatch = args["per_device_train_batch_size"] * args["gradient_accumulation_steps"]
    rollout = args["per_device_train_batch_size"] * args["steps_per_generation"]
    phases = switches_in_force(update.group_schedule, args["num_generations"], update.steps_per_rollout)
    return {
        "minibatches": update.minibatches,
        "epochs": update.epochs,
        "minibatch_completions": minibatch,
        "rollout_completions": rollout,
        "rollout_prompts": _phased([(s.step, rollout // s.size) for s in phases]),
        "group_schedule": _phased([(s.step, s.size) for s in phases]),
        "steps_per_rollout": update.steps_per_rollout,
        "policy_ratio": "moves within a rollout" if update.ratio_can_leave_one else "always 1 (one step per rollout)",
    }


def rollout_text(completions: Any, prompts: Any) -> str:
    """A rollout for people: "256 completions (32 prompts)", or with a group schedule "256 completions
    (prompts: 32, 16 from step 100)". Reads the view's values or their MLflow strings."""
    prompts = str(prompts)
    return f"{completions} completions ({prompts} prompts)" if prompts.isdigit() else f"{completions} completions (prompts: {prompts})"


def _phased(values: list[tuple[int, int]]) -> Any:
    """One value, or a schedule read as text: [(0, 16), (52, 8)] -> "16, 8 from step 52"."""
    if len(values) == 1:
        return values[0][1]
    return ", ".join([str(values[0][1])] + [f"{v} from step {step}" for step, v in values[1:]])


def schedule_warning(arm: str, update, algorithm: str) -> str | None:
    """The validate warning for an arm whose policy ratio can never leave 1, or None."""
    if update.ratio_can_leave_one or algorithm == "sft":  # SFT has no policy ratio
        return None
    degenerate = {"ppo": "PPO is then actor-critic with GAE, its value clip idle too",
                  "grpo": "GRPO is then a policy gradient with a group baseline"}[algorithm]
    return (f"arm {arm!r}: one optimiser step per rollout (update.minibatches 1, update.epochs 1): the policy ratio "
            f"is always 1, so the clipped objective never clips ({degenerate}); set update.minibatches (e.g. 4) or "
            "update.epochs above 1")
