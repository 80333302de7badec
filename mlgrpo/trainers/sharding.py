"""PPO's critic under the engine accelerate trains the policy with: one process, DDP, or FSDP2.

    engine of the run (accelerator, or the experiment file's training settings)
      -> ppo_refusal: what PPO cannot run under it, and why (the trainer raises it; `validate` names the key)
      -> prepare_critic: the critic (and, under FSDP2, its optimiser) prepared by the same accelerator as
         the policy, so that both are sharded (FSDP2) or both averaged over ranks (DDP)
      -> critic_checkpoint / load_critic_checkpoint: the critic's full weights and optimiser state, gathered
         from its shards for a checkpoint and sharded again on resume

Accelerate prepares one model per call under FSDP2 and wants its optimiser in the same call (its parameters
are swapped for the shards); the critic's optimiser stays a plain torch optimiser for the step
(critic.critic_optimizer_step): accelerate's wrapper would call the shared GradScaler's update() a second time.
DeepSpeed gives each prepared model its own engine, which accelerate refuses for a second model
("You can't use same `Accelerator()` instance with multiple models when using DeepSpeed"): PPO refuses it.
Knows nothing about rewards, TRL's rollout or MLflow.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

SINGLE, DDP, FSDP1, FSDP2, DEEPSPEED = "single", "ddp", "fsdp1", "fsdp2", "deepspeed"
SHARED_BACKBONE = ("head", "lora")  # critics that run on the policy's own backbone (trainers/critic.py)


def ppo_refusal(engine: str, value_model: str, processes: int = 1) -> str | None:
    """Why PPO with this critic cannot train under `engine` on `processes` ranks; None when it can.

    >>> ppo_refusal("fsdp2", "separate", 8) is None, ppo_refusal("ddp", "lora", 2) is None
    (True, True)
    """
    if engine == DEEPSPEED:
        return ("PPO does not run under DeepSpeed: accelerate gives every prepared model its own DeepSpeed engine "
                "and refuses a second one (the critic) on one Accelerator; shard PPO with FSDP2 instead "
                "(training.fsdp: full_shard, or experiments/accelerate/fsdp2.yaml); GRPO runs under DeepSpeed")
    if engine == FSDP1:
        return ("PPO shards its critic with FSDP2 only (transformers deprecates FSDP1): set "
                "training.fsdp_config.version: 2")
    if engine == FSDP2 and value_model in SHARED_BACKBONE:
        return (f"ppo.value_model: {value_model} runs on the policy's backbone, which FSDP2 shards as part of the "
                "policy (its layers cannot be called apart from it); use value_model: separate, which FSDP2 shards "
                "as a model of its own")
    if value_model == "head" and processes > 1:
        return ("ppo.value_model: head is single-process only: its loss backpropagates into the policy's backbone, "
                "whose gradients the policy's DDP would average twice in one step; use separate or lora")
    return None


def training_engine(training: Mapping[str, Any]) -> str:
    """The engine an experiment's training settings (GRPOConfig keyword arguments) ask for; "ddp" stands for
    whatever accelerate launches without FSDP or DeepSpeed (one process, or DDP)."""
    if training.get("deepspeed"):
        return DEEPSPEED
    if training.get("fsdp"):
        return FSDP2 if int(_fsdp_option(training, "version", 2)) == 2 else FSDP1
    return DDP


def sharded_states(training: Mapping[str, Any]) -> tuple[str, ...]:
    """Which states the engine splits over the ranks: ZeRO-1 the optimiser's, ZeRO-2 and FSDP's
    shard_grad_op (or FSDP2 without reshard_after_forward: weights whole again after each forward) also the
    gradients, ZeRO-3 and FSDP's full_shard also the weights.

    >>> sharded_states({"fsdp": "full_shard"}), sharded_states({"deepspeed": {"zero_optimization": {"stage": 1}}})
    (('optimizer', 'gradients', 'weights'), ('optimizer',))
    """
    engine = training_engine(training)
    if engine == DEEPSPEED:
        return ("optimizer", "gradients", "weights")[:zero_stage(training["deepspeed"])]
    if engine == DDP:
        return ()
    fsdp = training["fsdp"]
    whole = "shard_grad_op" in (fsdp if isinstance(fsdp, (list, tuple)) else str(fsdp).split())
    if engine == FSDP2:
        whole = whole or str(_fsdp_option(training, "reshard_after_forward", True)).lower() == "false"
    return ("optimizer", "gradients") if whole else ("optimizer", "gradients", "weights")


def zero_stage(deepspeed: Mapping | str) -> int:
    """The ZeRO stage of a DeepSpeed config (a dict, or the path of its JSON file, as GRPOConfig takes it)."""
    if not isinstance(deepspeed, Mapping):
        with open(deepspeed, encoding="utf-8") as handle:
            deepspeed = json.load(handle)
    return int((deepspeed.get("zero_optimization") or {}).get("stage", 0))


def _fsdp_option(training: Mapping[str, Any], name: str, default: Any) -> Any:
    config = training.get("fsdp_config") or {}  # transformers reads "x" and "fsdp_x" alike
    return config.get(name, config.get(f"fsdp_{name}", default))


def accelerator_engine(accelerator) -> str:
    """The engine `accelerator` prepares models with."""
    from accelerate.utils import DistributedType

    if accelerator.distributed_type == DistributedType.DEEPSPEED:
        return DEEPSPEED
    if accelerator.distributed_type == DistributedType.FSDP:
        return FSDP2 if accelerator.is_fsdp2 else FSDP1
    return DDP if accelerator.num_processes > 1 else SINGLE


def check_engine(accelerator, args, value_model: str) -> str:
    """The accelerator's engine, or a UserError when PPO cannot run under it or when FSDP was asked for and
    accelerate left it off (it enables FSDP on GPU process groups only: on CPU it trains with DDP)."""
    from mlgrpo.errors import UserError

    engine = accelerator_engine(accelerator)
    if getattr(args, "fsdp", None) and engine not in (FSDP1, FSDP2):
        raise UserError(f"training.fsdp is set but accelerate runs this job without FSDP (distributed type "
                        f"{accelerator.distributed_type.value}; it enables FSDP on GPU process groups only): run it on "
                        "GPUs, or drop training.fsdp")
    problem = ppo_refusal(engine, value_model, accelerator.num_processes)
    if problem:
        raise UserError(problem)
    return engine


def prepare_critic(accelerator, engine: str, critic, parameters: list, learning_rate: float):
    """(prepared critic, its torch AdamW, the parameters that optimiser steps): under FSDP2 the critic is
    sharded like the policy and its optimiser holds the shards; else the critic is DDP-wrapped (several
    processes) or placed (one), and the optimiser holds `parameters` as given."""
    import torch

    optimizer = torch.optim.AdamW(parameters, lr=learning_rate)
    if engine != FSDP2:
        return accelerator.prepare(critic), optimizer, parameters
    critic, prepared = accelerator.prepare(critic, optimizer)
    optimizer = prepared.optimizer  # the torch optimiser under accelerate's wrapper, its parameters swapped
    return critic, optimizer, [p for group in optimizer.param_groups for p in group["params"]]


def critic_checkpoint(critic, optimizer) -> tuple[dict, dict]:
    """The FSDP2 critic's full weights and optimiser state (keyed by parameter name) on rank 0's CPU (empty
    on the others); a collective: every rank calls it."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    return get_state_dict(critic, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def load_critic_checkpoint(critic, optimizer, weights: dict, optimizer_state: dict) -> None:
    """The full state critic_checkpoint wrote (read by every rank), sharded again into the FSDP2 critic and
    its optimiser."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

    set_state_dict(critic, optimizer, model_state_dict=weights, optim_state_dict=optimizer_state,
                   options=StateDictOptions(full_state_dict=True))
