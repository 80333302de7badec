"""What a GRPO or PPO run holds in memory at its peak, from first principles, with four fitted constants.

    exact terms     policy weights, gradients and AdamW's two moments of what trains (all of it, or the
                    LoRA adapter, kept in float32 by peft), the critic (a float32 copy of the backbone with its
                    own gradients and AdamW; a head; or its own adapter and head), frozen copies (TRL's
                    reference model when a KL is on without LoRA; mlgrpo run's evaluation reference), and
                    the generation KV cache (2 x layers x kv width x tokens)
    fitted terms    the process (interpreter, torch, transformers, TRL: CPU RSS only) and the tokenizer's
                    tables per vocabulary entry (CPU only); activations per layer x hidden x token of a
                    training micro-batch (kept at each layer's input under gradient checkpointing); and
                    copies of the largest tensor (the embedding, for any real vocabulary) in flight while a
                    fully trained model's gradients are summed and its optimiser steps, per such model

Sharded over N ranks (FSDP, DeepSpeed ZeRO; Workload.sharded) each rank holds 1/N of what its engine shards:
ZeRO-1 the optimiser states, ZeRO-2 also the gradients, FSDP full_shard / ZeRO-3 also the weights, of the
policy, of a separate critic (FSDP2 shards it as a model of its own, trainers/sharding.py) and of TRL's
reference model. Activations, the KV cache and the largest tensor in flight (all-gathered whole) stay per rank.

PPO holds two training graphs at once: the critic's forward and backward run while the policy's graph
waits for its backward (trainers/ppo.py); with a value head both backpropagate into one backbone. TRL
computes log-probabilities in vocabulary chunks, so no (tokens, vocab) logit tensor is ever whole. The
constants are fitted by bench/bench_scale.py to peak memory measured at 0.6M to 268M parameters and
stored beside this file (memory_fit.json), with the error on the points they were fitted to and on each
model size left out of the fit. Pure arithmetic over parameter counts (models/shape.py): knows nothing
about torch, trainers' code or YAML.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from mlgrpo.models.shape import Counts

FIT_FILE = Path(__file__).with_name("memory_fit.json")
ADAM_STATES = 2  # exp_avg and exp_avg_sq, in the parameter's dtype
LORA_BYTES = 4  # peft keeps adapter weights in float32 (autocast_adapter_dtype), whatever the base's dtype
CRITIC_BYTES = 4  # the separate critic is a float32 copy (trainers/critic.py)


@dataclass(frozen=True)
class Workload:
    """What an arm trains and how big its batches are."""

    algorithm: str  # "grpo" or "ppo"
    critic: str | None  # PPO's value_model: "separate", "head" or "lora"; None for GRPO
    weight_bytes: int  # 4 (float32) or 2 (bfloat16, float16)
    rollout: int  # completions generated at once (the generation batch)
    micro_batch: int  # completions in one forward and backward
    prompt_tokens: int  # the longest prompt (batches are padded to it)
    completion_tokens: int  # max_completion_length
    reference: bool = False  # a frozen copy of the policy for the KL (kl.coef > 0 without LoRA)
    eval_copy: bool = False  # mlgrpo run's frozen initial policy for held-out KL (no LoRA, < 1B parameters)
    shards: int = 1  # ranks the sharded states are split over (1: nothing sharded)
    sharded: tuple[str, ...] = ()  # which states: "optimizer" (ZeRO-1), + "gradients" (ZeRO-2), + "weights" (FSDP, ZeRO-3)
    reference_sharded: bool = False  # the KL reference is prepared by the engine (TRL's ref model), not a plain copy


@dataclass(frozen=True)
class Coefficients:
    base: float  # bytes of the process before the model (CPU RSS; 0 on a GPU, whose allocator counts tensors only)
    per_vocab: float  # bytes per vocabulary entry: the tokenizer's tables (CPU RSS; 0 on a GPU)
    activation: float  # bytes per layer x hidden x token of a training micro-batch
    largest_copies: float  # copies of the largest tensor in flight per fully trained model


def terms(shape: Counts, work: Workload, coef: Coefficients) -> dict[str, float]:
    """Each term of the peak in bytes on one rank; their sum is the estimate."""
    lora = shape.lora > 0
    trained, trained_bytes = (shape.lora, LORA_BYTES) if lora else (shape.parameters, work.weight_bytes)
    share = {state: 1 / work.shards if state in work.sharded else 1.0 for state in ("weights", "gradients", "optimizer")}
    reference = shape.parameters * work.weight_bytes * (share["weights"] if work.reference_sharded else 1.0)
    out = {
        "process": coef.base + coef.per_vocab * shape.vocab,
        "weights": share["weights"] * (shape.parameters * work.weight_bytes + (shape.lora * LORA_BYTES if lora else 0)),
        "gradients": share["gradients"] * trained * trained_bytes,
        "optimizer": share["optimizer"] * ADAM_STATES * trained * trained_bytes,
        "critic": sum(share[state] * size for state, size in _critic(shape, work).items()),
        "frozen_copies": int(work.reference) * reference + int(work.eval_copy) * shape.parameters * work.weight_bytes,
        "kv_cache": 2 * shape.layers * shape.kv_width * work.weight_bytes * work.rollout
        * (work.prompt_tokens + work.completion_tokens),
    }
    graphs = 2 if work.algorithm == "ppo" else 1
    tokens = work.micro_batch * (work.prompt_tokens + work.completion_tokens)
    out["activations"] = graphs * coef.activation * shape.layers * shape.hidden * tokens
    out["transients"] = coef.largest_copies * shape.largest * largest_bytes(shape, work)
    return out


def largest_bytes(shape: Counts, work: Workload) -> float:
    """Bytes per element of the largest tensor over the fully trained models: the policy without LoRA (twice
    when a value head's loss also backpropagates into it) and a separate critic (float32)."""
    policy = 0 if shape.lora else (2 if work.critic == "head" else 1) * work.weight_bytes
    return policy + (CRITIC_BYTES if work.critic == "separate" else 0)


def _critic(shape: Counts, work: Workload) -> dict[str, float]:
    """The critic's own bytes by state: weights, gradients and AdamW's moments (float32)."""
    if work.critic is None:
        return {}
    own = {"separate": shape.backbone, "lora": shape.lora, "head": 0}[work.critic]
    # "head": the backbone is the policy's, its gradients counted with the policy's
    elements = own + shape.hidden + 1  # and the linear head
    return {"weights": elements * CRITIC_BYTES, "gradients": elements * CRITIC_BYTES,
            "optimizer": ADAM_STATES * elements * CRITIC_BYTES}


def estimate(shape: Counts, work: Workload, coef: Coefficients) -> float:
    """Estimated peak memory in bytes."""
    return sum(terms(shape, work, coef).values())


@dataclass(frozen=True)
class Fit:
    """Fitted coefficients and how well they matched the measurements they came from."""

    cpu: Coefficients
    points: int  # measured (size, arm) points the fit used
    median_error: float  # |estimate - measured| / measured, over those points
    max_error: float
    # each model size predicted by a fit without it: size -> its largest error there
    cross_validated: dict[str, float]
    command: str  # what measured them
    date: str

    @property
    def cross_validated_max_error(self) -> float:
        return max(self.cross_validated.values(), default=float("nan"))

    def gpu(self) -> Coefficients:
        """On a GPU torch.cuda.max_memory_allocated counts tensors only: no process or tokenizer term."""
        return Coefficients(base=0.0, per_vocab=0.0, activation=self.cpu.activation,
                            largest_copies=self.cpu.largest_copies)

    def to_json(self) -> dict:
        return {**asdict(self), "cpu": asdict(self.cpu)}

    @classmethod
    def from_json(cls, data: dict) -> Fit:
        return cls(**{**data, "cpu": Coefficients(**data["cpu"])})


def load_fit(path: Path = FIT_FILE) -> Fit | None:
    """The stored fit, or None before bench_scale has produced one."""
    try:
        return Fit.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
