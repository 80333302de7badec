"""PPO's value model: a backbone and a scalar head, V(s_t) for every position of a sequence.

"separate": a copy of the policy's backbone (same architecture, initialised from the policy's weights,
as in classic RLHF where the critic starts from the policy or the reward model), trained by its own
optimiser. "head": the policy's own backbone object with a new head: the value loss then flows into the
policy's parameters too. LoRA adapters stay on the policy: the copy is taken from the base model, so the
critic has none (the method notes' advice: no adapters on the critic).
"lora": for a LoRA policy, a second adapter (CRITIC_ADAPTER, the policy's LoRA settings) on the policy's
frozen base, and a head; the critic's forward and backward run inside `critic_forward`, which makes its
adapter the active one (peft's set_adapter) and gives the policy's back after. The critic then costs its
adapter and head, not a second model: PPO + LoRA at about GRPO + LoRA's memory (reports/benchmarks.md).
`critic_optimizer_step` steps the critic's own optimiser on gradients the shared fp16 GradScaler scaled.
Knows nothing about TRL, rewards or MLflow.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator

import torch
from torch import Tensor, nn

CRITIC_ADAPTER = "critic"  # the LoRA critic's adapter name on the policy's PeftModel


class ValueModel(nn.Module):
    """V(s_t) = head(h_t) for each position t; h_t the backbone's last hidden state."""

    def __init__(self, backbone: nn.Module, hidden_size: int, adapter: str | None = None) -> None:
        super().__init__()
        self.backbone = backbone
        self.adapter = adapter  # the peft adapter that must be active in the backbone for V (None: no switch)
        self.head = nn.Linear(hidden_size, 1)
        # A zero head starts V at 0 everywhere: the first GAE advantages are then the plain returns, and
        # a random head's noise does not leak into the first policy updates.
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    @property
    def _no_split_modules(self) -> list[str] | None:
        # The backbone's decoder layers, which FSDP2 shards one by one (accelerate's transformer-based wrap
        # reads this from the model it prepares, and keeps the classes it found for the policy, prepared later).
        return getattr(self.backbone, "_no_split_modules", None)

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        # (B, L), a tensor of its own rather than a view: FSDP2 warns on a view (an in-place op on it would skip
        # the backward's all-gather hook)
        return self.head(hidden.to(self.head.weight.dtype)).squeeze(-1).clone()


def completion_values(critic: nn.Module, prompt_ids: Tensor, prompt_mask: Tensor, completion_ids: Tensor,
                      completion_mask: Tensor, batch_size: int | None = None) -> Tensor:
    """(B, T) values of the states before each completion token (position P-1+t predicts token t).

    `critic` is a ValueModel or its distributed wrapper: calling the wrapper (not a method of the module
    under it) is what makes DistributedDataParallel average the critic's gradients over ranks.
    batch_size: rows per forward (a rollout's values in micro-batch-sized chunks, as TRL computes its
    old and reference log-probs, so that the activations of one forward never span the whole rollout);
    None: one forward.
    """
    ids = torch.cat([prompt_ids, completion_ids], dim=1)
    mask = torch.cat([prompt_mask, completion_mask], dim=1)
    step = batch_size or ids.size(0)
    values = torch.cat([critic(ids[i : i + step], mask[i : i + step]) for i in range(0, ids.size(0), step)])
    p, t = prompt_ids.size(1), completion_ids.size(1)
    return values[:, p - 1 : p - 1 + t]


def base_model(policy: nn.Module) -> nn.Module:
    """The policy without PEFT adapters (the model itself when it has none)."""
    get_base = getattr(policy, "get_base_model", None)
    return get_base() if callable(get_base) else policy


def build_value_model(policy: nn.Module, mode: str) -> ValueModel:
    """A critic for `policy`: a float32 copy of its backbone ("separate"), its backbone ("head"), or its
    backbone with a critic adapter beside the policy's ("lora"; `policy` must be a peft model)."""
    base = base_model(policy)
    backbone = base.base_model  # transformers: the decoder without the LM head (Qwen2Model, LlamaModel ...)
    hidden = base.config.hidden_size
    if mode == "lora":
        if base is policy:
            raise ValueError("a LoRA critic needs a LoRA policy (a peft model) whose frozen base it shares")
        policy_adapter = policy.active_adapter
        policy.add_adapter(CRITIC_ADAPTER, copy.deepcopy(policy.peft_config[policy_adapter]))
        policy.set_adapter(policy_adapter)  # the policy's adapter active and trainable, the critic's frozen
        return ValueModel(backbone, hidden, adapter=CRITIC_ADAPTER)
    if mode == "separate":
        if base is not policy:  # PEFT injects adapter layers in place: copy, then take them out again
            backbone = copy.deepcopy(policy).unload().base_model
        else:
            backbone = copy.deepcopy(backbone)
        backbone = backbone.float()
        for param in backbone.parameters():
            param.requires_grad_(True)
        return ValueModel(backbone, hidden)
    if mode == "head":
        return ValueModel(backbone, hidden)
    raise ValueError(f"unknown value model mode {mode!r}")


def trainable_critic_parameters(critic: ValueModel, policy: nn.Module) -> list[nn.Parameter]:
    """The critic's parameters that the policy's optimiser does not already own (all of them when
    separate; only the head when it sits on the policy's backbone; its adapter and head when "lora")."""
    if critic.adapter is not None:
        marker = f".{critic.adapter}."
        return [p for name, p in critic.named_parameters() if marker in name or name.startswith("head.")]
    owned = {id(p) for p in policy.parameters()}
    return [p for p in critic.parameters() if id(p) not in owned and p.requires_grad]


def is_critic_tensor(critic: ValueModel, key: str, mode: str) -> bool:
    """Whether a key of the critic's state_dict is the critic's own (saved with its checkpoint) rather than
    the policy's, which the policy's checkpoint already holds."""
    if mode == "separate":
        return True
    return key.startswith("head.") or (critic.adapter is not None and f".{critic.adapter}." in key)


@contextlib.contextmanager
def critic_forward(policy: nn.Module, critic: ValueModel) -> Iterator[None]:
    """Run the critic's forward (and backward) with its adapter active; the policy's adapter comes back after.

    peft's set_adapter also sets requires_grad: only the active adapter's weights are trainable, so the
    backward must run inside the block too, and the policy's optimiser (built from trainable parameters)
    never holds the critic's adapter. A no-op for critics without an adapter.
    """
    if critic.adapter is None:
        yield
        return
    policy_adapter = policy.active_adapter
    policy.set_adapter(critic.adapter)
    try:
        yield
    finally:
        policy.set_adapter(policy_adapter)


def critic_optimizer_step(optimizer: torch.optim.Optimizer, parameters: list[nn.Parameter], max_grad_norm: float,
                          scaler: torch.amp.GradScaler | None = None) -> Tensor:
    """Clip and apply the critic's gradients; returns their norm before clipping.

    With fp16 the critic's loss is scaled by the same GradScaler as the policy's (accelerate's backward),
    so the gradients are unscaled first: clipping scaled gradients would clip at max_grad_norm * scale.
    `scaler.step` skips the update when they overflowed. `scaler.update()` is left to the policy's step
    (accelerate calls it there): it must run once per optimiser step, after every optimiser of the step
    (GradScaler's multi-optimiser protocol); a second call would move the loss scale twice per step.
    `optimizer` is a plain torch optimiser, not one prepared by accelerate (whose step() calls update()).
    Under FSDP2 the parameters are shards (DTensors): the norm is that of the whole gradient, over ranks.
    """
    if scaler is not None:
        scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(parameters, max_grad_norm)
    if hasattr(norm, "full_tensor"):  # a DTensor (FSDP2): the same total on every rank
        norm = norm.full_tensor()
    if scaler is not None:
        scaler.step(optimizer)
    else:
        optimizer.step()
    return norm
