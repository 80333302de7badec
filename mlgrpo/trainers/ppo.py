"""PPO on the same TRL rollout engine as GRPO: a critic, per-token GAE and a clipped value loss.

Everything but the algorithm is shared with MultilingualGRPOTrainer (generation, rewards, sampler,
clipped policy loss, update schedule, metrics), and PPO draws the same number of completions per prompt,
so a comparison measures the algorithm and not two code bases. What PPO adds:

    rollout values V(s_t) (critic, no grad) -> token rewards (algorithms.ppo: the outcome on the last
    token, minus kl.coef * KL_t when the KL sits in the reward) -> one GAE pass from the registry
    (whitened advantages for the policy; value targets = raw advantages + values for the critic; rows
    without a reward left out of both, and counted) -> TRL's clipped policy loss -> clipped value loss
    -> the critic's optimiser step (after a warm-up in which only the critic learns, if set)

With several minibatches per rollout (UpdateSchedule) the policy's ratio and the critic's values move away
from the rollout's between steps, so both clips act (train/clip_ratio/*, train/ppo/value_clipfrac).
The critic trains under the policy's engine (trainers/sharding.py: one process, DDP, or FSDP2 with both
models sharded), with its own AdamW and learning-rate schedule (the policy's schedule type and warm-up, at
ppo.value_learning_rate). It is saved with every checkpoint (critic.safetensors, critic_optimizer.pt,
critic_scheduler.pt) and restored on resume. Knows nothing about MLflow or YAML.
"""

from __future__ import annotations

import copy
import logging
import os

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor
from transformers import get_scheduler
from trl.models import prepare_fsdp
from trl.trainer.utils import add_fused_lm_head

from mlgrpo.algorithms import GroupKeys, compute_advantages, kl_penalty, per_completion_advantage, token_rewards
from mlgrpo.algorithms.losses import LOSSES, explained_variance, masked_mean
from mlgrpo.errors import UserError
from mlgrpo.trainers.critic import (
    base_model, build_value_model, completion_values, critic_forward, critic_optimizer_step, is_critic_tensor,
    trainable_critic_parameters,
)  # fmt: skip
from mlgrpo.trainers.grpo import MultilingualGRPOTrainer
from mlgrpo.trainers.rollout import Rollout, RolloutAdvantages
from mlgrpo.trainers.sharding import FSDP2, check_engine, critic_checkpoint, load_critic_checkpoint, prepare_critic

CRITIC_WEIGHTS = "critic.safetensors"
CRITIC_OPTIMIZER = "critic_optimizer.pt"
CRITIC_SCHEDULER = "critic_scheduler.pt"

log = logging.getLogger(__name__)


class PPOTrainer(MultilingualGRPOTrainer):
    """PPO with a critic and GAE on TRL's GRPOTrainer machinery. `algorithm.name` must be "ppo"."""

    def __init__(self, *args, algorithm=None, **kwargs) -> None:
        if algorithm is None or algorithm.name != "ppo":
            raise UserError("PPOTrainer needs an AlgorithmConfig with name 'ppo' (AlgorithmConfig.ppo_default())")
        super().__init__(*args, algorithm=algorithm, **kwargs)
        settings = algorithm.ppo
        self._engine = check_engine(self.accelerator, self.args, settings.value_model)
        policy = self.accelerator.unwrap_model(self.model)
        if settings.value_model == "lora" and base_model(policy) is policy:
            raise UserError("ppo.value_model: lora puts the critic's adapter on a LoRA policy's frozen base; set "
                            "model.lora, or use value_model: separate or head for full fine-tuning")
        critic = build_value_model(policy, settings.value_model).to(self.accelerator.device)
        # Prepared with the critic's adapter active (a no-op for other critics): DDP averages the gradients of
        # the parameters that require one when it wraps the model, so the critic's adapter and head, not the policy's.
        with critic_forward(policy, critic):
            self.critic, self.critic_optimizer, self._critic_params = prepare_critic(
                self.accelerator, self._engine, critic, trainable_critic_parameters(critic, policy),
                settings.value_learning_rate)
        self.critic_scheduler = None  # made with the policy's (create_scheduler), when train() knows the steps
        self._kl_reference = self._reference_for_kl(policy) if self.kl.placed("ppo") == "reward" else None

    def _reference_for_kl(self, policy):
        """The frozen initial policy for the per-token KL penalty (TRL's ref model when it has one; with
        PEFT, the base model with adapters disabled; else the caller's reference_model, or a copy)."""
        if self.ref_model is not None:
            return self.ref_model
        if base_model(policy) is not policy:
            return "disable_adapters"
        if self.reference_model is not None:  # TRL's log-prob pass calls it with its fused LM head, as its ref model
            reference = self.reference_model.to(self.accelerator.device)
            add_fused_lm_head(reference, temperature=self.temperature, cast_lm_head_to_fp32=self.args.cast_lm_head_to_fp32)
        else:
            reference = copy.deepcopy(policy).eval()
            for param in reference.parameters():
                param.requires_grad_(False)
        # sharded like the policy under FSDP2, as TRL prepares its own reference model
        return prepare_fsdp(reference, self.accelerator) if self._engine == FSDP2 else reference

    # ---- advantages from the critic -----------------------------------------------------------------

    def _advantages(self, rewards: Tensor, keys: GroupKeys, output: dict, local: slice) -> RolloutAdvantages:
        mask = output["completion_mask"].to(torch.float32)
        with torch.no_grad(), self._critic_forward():
            values = completion_values(
                self.critic, output["prompt_ids"], output["prompt_mask"], output["completion_ids"],
                output["completion_mask"], self._forward_rows(),
            ).float() * mask
        rewards_t = token_rewards(rewards[local].to(torch.float32), mask)
        kl_metrics = {}
        if self._kl_reference is not None:
            logps, ref_logps = self._policy_and_reference_logps(output)
            penalty, kl_metrics = kl_penalty(logps, ref_logps, mask, self.kl.coef, self.kl.estimator)
            rewards_t = rewards_t - penalty
        # One GAE pass over the gathered batch, so several processes give the advantages of one.
        g_rewards, g_values, g_mask = (self._gather_padded(x) for x in (rewards_t, values, mask))
        result = compute_advantages(g_rewards, keys, self.algorithm.advantage, values=g_values, mask=g_mask,
                                    step=self.state.global_step, total_steps=max(1, self.state.max_steps))
        width = mask.size(1)
        scored = result.mask[local, :width]  # completion tokens of rows that have a reward
        returns = result.returns[local, :width].detach()
        metrics = dict(result.metrics)
        metrics["ppo/value_mean"] = masked_mean(values, scored)
        metrics["ppo/returns_mean"] = masked_mean(returns, scored)
        metrics["ppo/explained_variance"] = explained_variance(values, returns, scored)
        metrics.update(kl_metrics)  # kl (TRL's name for the KL it logs when the KL is in its loss), ppo/kl_penalty
        per_row = per_completion_advantage(result.advantages, result.mask)
        return RolloutAdvantages(result.advantages[local, :width], per_row, metrics, old_values=values.detach(),
                                 returns=returns, value_mask=scored)

    def _policy_and_reference_logps(self, output: dict) -> tuple[Tensor, Tensor]:
        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        width, rows = output["completion_ids"].size(1), self._forward_rows()
        with torch.no_grad():
            logps = output.get("old_per_token_logps")
            if logps is None:
                logps = self.token_logps(self.model, ids, attention, width, rows)
            if self._kl_reference == "disable_adapters":
                with self.accelerator.unwrap_model(self.model).disable_adapter():
                    ref = self.token_logps(self.model, ids, attention, width, rows)
            else:
                ref = self.token_logps(self._kl_reference, ids, attention, width, rows)
        return logps.float(), ref.float()

    def _forward_rows(self) -> int:
        """Rows per forward over a rollout without gradient: a micro-batch, as TRL's own log-prob passes."""
        training = self.model.training
        return self.args.per_device_train_batch_size if training else self.args.per_device_eval_batch_size

    def _gather_padded(self, x: Tensor) -> Tensor:
        if self.accelerator.num_processes == 1:
            return x
        return self.accelerator.gather(self.accelerator.pad_across_processes(x, dim=1, pad_index=0))

    # ---- the critic's update ----------------------------------------------------------------------

    def _critic_forward(self):
        """The critic's adapter active around its forward and backward (value_model "lora"; else no-op)."""
        return critic_forward(self.accelerator.unwrap_model(self.model), self.accelerator.unwrap_model(self.critic))

    def critic_backward(self, batch: Rollout) -> None:
        """The clipped value loss of the micro-batch (LOSSES["value"]) and the critic's gradient."""
        with self._critic_forward():
            values = completion_values(
                self.critic, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask,
            ).float()
            # rows without a reward have no value target (value_mask)
            loss, metrics = LOSSES.get("value")(values, batch.old_values, batch.returns, batch.value_mask,
                                                self.algorithm.ppo.cliprange_value)
            scale = self.algorithm.ppo.vf_coef if self.algorithm.ppo.value_model == "head" else 1.0
            self.accelerator.backward(scale * loss / self.current_gradient_accumulation_steps)
        for name, value in metrics.items():  # ppo/value_loss, ppo/value_clipfrac
            self.record_metric("train", name, self.accelerator.gather(value).mean().item())

    def critic_step(self, skipped: bool) -> None:
        """The critic's optimiser step (skipped with the policy's when a loss or gradient was non-finite), its
        schedule's step, and the policy held still during the critic's warm-up."""
        if not skipped:
            norm = critic_optimizer_step(self.critic_optimizer, self._critic_params, self.algorithm.ppo.max_grad_norm,
                                         self.accelerator.scaler)
            self.record_metric("train", "ppo/critic_grad_norm", float(norm))
        self.critic_optimizer.zero_grad(set_to_none=True)
        # the rate this step used (as HF logs the policy's learning_rate), then the next; a skipped step
        # counts, as it does for the policy's schedule (guard.py)
        self.record_metric("train", "ppo/critic_learning_rate", self.critic_scheduler.get_last_lr()[0])
        self.critic_scheduler.step()
        self._hold_policy_in_warmup()

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        """The policy's schedule (HF's), and the critic's own: the same type, warm-up and length
        (training.lr_scheduler_type, warmup_steps), from ppo.value_learning_rate, stepped with the critic."""
        scheduler = super().create_scheduler(num_training_steps, optimizer)
        if self.args.lr_scheduler_type == "reduce_lr_on_plateau":
            raise UserError("training.lr_scheduler_type: reduce_lr_on_plateau steps on an evaluation metric, which "
                            "PPO's critic does not have; choose a schedule over steps (linear, cosine, constant, ...)")
        self.critic_scheduler = get_scheduler(
            self.args.lr_scheduler_type, optimizer=self.critic_optimizer,
            num_warmup_steps=self.args.get_warmup_steps(num_training_steps), num_training_steps=num_training_steps,
            scheduler_specific_kwargs=self.args.lr_scheduler_kwargs)
        return scheduler

    def _hold_policy_in_warmup(self) -> None:
        """During the critic's warm-up the policy's gradients are dropped, so its optimiser (AdamW skips
        parameters without a gradient) leaves the policy as it is. With value_model "head" the shared
        backbone is the policy's, so only the head learns then."""
        frozen = self.state.global_step < self.algorithm.ppo.warmup_steps
        self.record_metric("train", "ppo/policy_frozen", float(frozen))
        if frozen:
            owned = {id(p) for p in self._critic_params}
            for param in self.model.parameters():
                if id(param) not in owned:
                    param.grad = None

    def _guarded_parameters(self) -> list[torch.nn.Parameter]:
        owned = {id(p) for p in self._critic_params}
        return [p for p in super()._guarded_parameters() if id(p) not in owned] + self._critic_params

    # ---- checkpoints --------------------------------------------------------------------------------

    def save_state(self, folder: str) -> None:
        # The critic first: the base class writes mlgrpo's state file last, and a checkpoint without that
        # file is an unfinished one (a run killed while saving), which resuming passes over.
        if self._engine == FSDP2:  # gathered from the shards: a collective, on every rank
            state, optimizer_state = critic_checkpoint(self.critic, self.critic_optimizer)
        elif self.args.should_save:
            critic = self.accelerator.unwrap_model(self.critic)
            mode = self.algorithm.ppo.value_model
            state = {k: v for k, v in critic.state_dict().items() if is_critic_tensor(critic, k, mode)}
            optimizer_state = self.critic_optimizer.state_dict()
        if self.args.should_save:
            save_file({k: v.contiguous() for k, v in state.items()}, os.path.join(folder, CRITIC_WEIGHTS))
            torch.save(optimizer_state, os.path.join(folder, CRITIC_OPTIMIZER))
            torch.save(self.critic_scheduler.state_dict(), os.path.join(folder, CRITIC_SCHEDULER))
        super().save_state(folder)

    def load_state(self, checkpoint: str) -> None:
        super().load_state(checkpoint)
        weights = os.path.join(checkpoint, CRITIC_WEIGHTS)
        if not os.path.exists(weights):
            raise UserError(f"checkpoint {checkpoint} has no {CRITIC_WEIGHTS}: it was not written by PPOTrainer")
        # Read on the CPU, copied into the critic's own device: safetensors rejects accelerate's "cpu:0"
        # (a process's device under gloo), and load_state_dict copies across devices anyway.
        state = load_file(weights, device="cpu")
        optimizer_state = torch.load(os.path.join(checkpoint, CRITIC_OPTIMIZER), weights_only=True, map_location="cpu")
        if self._engine == FSDP2:
            load_critic_checkpoint(self.critic, self.critic_optimizer, state, optimizer_state)
        else:
            critic = self.accelerator.unwrap_model(self.critic)
            critic.load_state_dict(state, strict=self.algorithm.ppo.value_model == "separate")
            self.critic_optimizer.load_state_dict(optimizer_state)
        self._load_critic_schedule(checkpoint)

    def _load_critic_schedule(self, checkpoint: str) -> None:
        path = os.path.join(checkpoint, CRITIC_SCHEDULER)
        if os.path.exists(path):
            self.critic_scheduler.load_state_dict(torch.load(path, weights_only=True))
            return
        # A checkpoint from before the critic had a schedule: the schedule is a function of the step, so it
        # is brought to the checkpoint's step (the critic had trained at a constant rate until then).
        log.warning("checkpoint %s has no %s (written before the critic had a learning-rate schedule): the critic's "
                    "schedule starts at step %d", checkpoint, CRITIC_SCHEDULER, self.state.global_step)
        for _ in range(self.state.global_step):
            self.critic_scheduler.step()
