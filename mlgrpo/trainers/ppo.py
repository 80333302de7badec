"""PPO on the same TRL rollout engine as GRPO: a critic, per-token GAE and a clipped value loss.

Everything but the algorithm is shared with MultilingualGRPOTrainer (generation, rewards, sampler,
clipped policy loss, metrics), and PPO draws the same number of completions per prompt, so a comparison
measures the algorithm and not two code bases. What PPO adds:

    rollout values V(s_t) (critic, no grad) -> token rewards (outcome on the last token, minus
    kl_coef * (log pi - log pi_ref) per token when kl_mode="reward") -> GAE from the registry
    (whitened advantages for the policy; raw advantages + values = returns for the critic)
    -> TRL's clipped policy loss -> clipped value loss -> critic optimiser step

The critic is saved with every checkpoint (critic.safetensors, critic_optimizer.pt) and restored on
resume. Knows nothing about MLflow or YAML.
"""

from __future__ import annotations

import copy
import os

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from mlgrpo.algorithms import ESTIMATORS, EstimatorBatch, GroupKeys, compute_advantages
from mlgrpo.algorithms.losses import clipped_value_loss, explained_variance, masked_mean
from mlgrpo.errors import UserError
from mlgrpo.trainers.critic import base_model, build_value_model, completion_values, trainable_critic_parameters
from mlgrpo.trainers.grpo import MultilingualGRPOTrainer

CRITIC_WEIGHTS = "critic.safetensors"
CRITIC_OPTIMIZER = "critic_optimizer.pt"


class PPOTrainer(MultilingualGRPOTrainer):
    """PPO with a critic and GAE on TRL's GRPOTrainer machinery. `algorithm.name` must be "ppo"."""

    def __init__(self, *args, algorithm=None, **kwargs) -> None:
        if algorithm is None or algorithm.name != "ppo":
            raise UserError("PPOTrainer needs an AlgorithmConfig with name 'ppo' (AlgorithmConfig.ppo_default())")
        super().__init__(*args, algorithm=algorithm, **kwargs)
        settings = algorithm.ppo
        if self.accelerator.num_processes > 1 and settings.value_model == "head":
            raise UserError("ppo.value_model: head is single-process only; use value_model: separate with several processes")
        if getattr(self, "is_deepspeed_enabled", False):
            raise UserError("PPO's critic is not prepared for DeepSpeed yet; run PPO without DeepSpeed (GRPO supports it)")
        policy = self.accelerator.unwrap_model(self.model)
        critic = build_value_model(policy, settings.value_model).to(self.accelerator.device)
        params = trainable_critic_parameters(critic, policy)
        optimizer = torch.optim.AdamW(params, lr=settings.value_learning_rate)
        self.critic, self.critic_optimizer = self.accelerator.prepare(critic, optimizer)
        self._critic_params = params
        self._kl_reference = self._reference_for_kl(policy) if settings.kl_mode == "reward" and settings.kl_coef > 0 else None

    def _reference_for_kl(self, policy):
        """The frozen initial policy for the per-token KL penalty (TRL's ref model when it has one; with
        PEFT, the base model with adapters disabled)."""
        if self.ref_model is not None:
            return self.ref_model
        if base_model(policy) is not policy:
            return "disable_adapters"
        reference = copy.deepcopy(policy).eval()
        for param in reference.parameters():
            param.requires_grad_(False)
        return reference

    # ---- advantages from the critic -----------------------------------------------------------------

    def _advantages(self, rewards: Tensor, keys: GroupKeys, output: dict, local: slice) -> tuple[Tensor, dict]:
        settings, cfg = self.algorithm.ppo, self.algorithm.advantage
        mask = output["completion_mask"].to(torch.float32)
        with torch.no_grad():
            values = completion_values(
                self.critic, output["prompt_ids"], output["prompt_mask"], output["completion_ids"],
                output["completion_mask"],
            ).float() * mask
        token_rewards, kl = self._token_rewards(rewards[local], output, mask)
        # GAE and its whitening run over the gathered batch, so several processes give the advantages of one.
        g_rewards, g_values, g_mask = (self._gather_padded(x) for x in (token_rewards, values, mask))
        result = compute_advantages(g_rewards, keys, cfg, values=g_values, mask=g_mask,
                                    step=self.state.global_step, total_steps=max(1, self.state.max_steps))
        raw = ESTIMATORS.get(cfg.estimator).fn(EstimatorBatch(g_rewards, keys.prompt_ids, None, g_values, g_mask), cfg.params)
        width = mask.size(1)
        advantages = result.advantages[local, :width]
        unscored = torch.isnan(rewards[local])  # every reward function returned None: no signal (as TRL)
        advantages = advantages.masked_fill(unscored[:, None], 0.0)
        output["returns"] = (raw[local, :width] + values).detach()
        output["old_values"] = values.detach()
        metrics = dict(result.metrics)
        metrics["ppo/value_mean"] = masked_mean(values, mask)
        metrics["ppo/returns_mean"] = masked_mean(output["returns"], mask)
        metrics["ppo/explained_variance"] = explained_variance(values, output["returns"], mask)
        if kl is not None:
            metrics["ppo/kl_penalty"] = masked_mean(kl, mask)
        return advantages, metrics

    def _token_rewards(self, rewards: Tensor, output: dict, mask: Tensor) -> tuple[Tensor, Tensor | None]:
        """(B, T) outcome reward on each completion's last token, minus the per-token KL penalty."""
        token_rewards = torch.zeros_like(mask)
        last = (mask.sum(dim=1).long() - 1).clamp(min=0)
        token_rewards[torch.arange(mask.size(0), device=mask.device), last] = rewards.nan_to_num(0.0).to(mask.dtype)
        if self._kl_reference is None:
            return token_rewards, None
        logps, ref_logps = self._policy_and_reference_logps(output)
        kl = (logps - ref_logps) * mask
        return token_rewards - self.algorithm.ppo.kl_coef * kl, kl

    def _policy_and_reference_logps(self, output: dict) -> tuple[Tensor, Tensor]:
        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        width = output["completion_ids"].size(1)
        with torch.no_grad():
            logps = output.get("old_per_token_logps")
            if logps is None:
                logps, _, _ = self._get_per_token_logps_and_entropies(self.model, ids, attention, width)
            if self._kl_reference == "disable_adapters":
                with self.accelerator.unwrap_model(self.model).disable_adapter():
                    ref, _, _ = self._get_per_token_logps_and_entropies(self.model, ids, attention, width)
            else:
                ref, _, _ = self._get_per_token_logps_and_entropies(self._kl_reference, ids, attention, width)
        return logps.float(), ref.float()

    def _gather_padded(self, x: Tensor) -> Tensor:
        if self.accelerator.num_processes == 1:
            return x
        return self.accelerator.gather(self.accelerator.pad_across_processes(x, dim=1, pad_index=0))

    # ---- the critic's update ----------------------------------------------------------------------

    def _compute_loss(self, model, inputs):
        loss = super()._compute_loss(model, inputs)
        if self.model.training and "returns" in inputs:
            self._critic_backward(inputs)
        return loss

    def _critic_backward(self, inputs) -> None:
        mask = inputs["completion_mask"].to(torch.float32)
        values = completion_values(
            self.critic, inputs["prompt_ids"], inputs["prompt_mask"], inputs["completion_ids"], inputs["completion_mask"]
        ).float()
        out = clipped_value_loss(values, inputs["old_values"], inputs["returns"], mask, self.algorithm.ppo.cliprange_value)
        scale = self.algorithm.ppo.vf_coef if self.algorithm.ppo.value_model == "head" else 1.0
        self.accelerator.backward(scale * out.loss / self.current_gradient_accumulation_steps)
        self._metrics["train"]["ppo/value_loss"].append(self.accelerator.gather(out.loss.detach()).mean().item())
        self._metrics["train"]["ppo/value_clipfrac"].append(self.accelerator.gather(out.clipfrac).mean().item())

    def training_step(self, model, inputs, num_items_in_batch):
        loss = super().training_step(model, inputs, num_items_in_batch)
        if self._step % self.current_gradient_accumulation_steps == 0:
            if not self._update_skipped:  # a non-finite loss or gradient skips the critic's step with the policy's
                torch.nn.utils.clip_grad_norm_(self._critic_params, self.algorithm.ppo.max_grad_norm)
                self.critic_optimizer.step()
            self.critic_optimizer.zero_grad(set_to_none=True)
        return loss

    def _guarded_parameters(self) -> list[torch.nn.Parameter]:
        owned = {id(p) for p in self._critic_params}
        return [p for p in super()._guarded_parameters() if id(p) not in owned] + self._critic_params

    # ---- checkpoints --------------------------------------------------------------------------------

    def _save_checkpoint(self, model, trial):
        # The critic first: the base class writes mlgrpo's state file last, and a checkpoint without that
        # file is an unfinished one (a run killed while saving), which resuming passes over.
        if self.args.should_save:
            folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
            os.makedirs(folder, exist_ok=True)
            critic = self.accelerator.unwrap_model(self.critic)
            state = {k: v.contiguous() for k, v in critic.state_dict().items() if not self._is_policy_tensor(k)}
            save_file(state, os.path.join(folder, CRITIC_WEIGHTS))
            torch.save(self.critic_optimizer.state_dict(), os.path.join(folder, CRITIC_OPTIMIZER))
        super()._save_checkpoint(model, trial)

    def _is_policy_tensor(self, key: str) -> bool:
        """With a value head on the policy's backbone, the backbone is saved with the policy already."""
        return self.algorithm.ppo.value_model == "head" and not key.startswith("head.")

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None:
            return
        weights = os.path.join(checkpoint, CRITIC_WEIGHTS)
        if not os.path.exists(weights):
            raise UserError(f"checkpoint {checkpoint} has no {CRITIC_WEIGHTS}: it was not written by PPOTrainer")
        critic = self.accelerator.unwrap_model(self.critic)
        # Read on the CPU, copied into the critic's own device: safetensors rejects accelerate's "cpu:0"
        # (a process's device under gloo), and load_state_dict copies across devices anyway.
        critic.load_state_dict(load_file(weights, device="cpu"), strict=self.algorithm.ppo.value_model == "separate")
        optimizer_state = torch.load(os.path.join(checkpoint, CRITIC_OPTIMIZER), weights_only=True, map_location="cpu")
        self.critic_optimizer.load_state_dict(optimizer_state)
