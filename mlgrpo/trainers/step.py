"""The training step, owned: one micro-batch from rollout to metrics, and the policy's loss over the record.

HF's training loop calls `training_step` gradient_accumulation_steps times per optimiser step, then clips the
policy's gradients and steps its optimiser and schedule. Everything in between reads top to bottom here:

    rollout (the arm's: generation, rewards, advantages -> one Rollout record, every steps_per_generation x
    num_iterations micro-batches; shuffled and split into micro-batches as TRL does) -> the policy's loss
    (`loss`: the algorithms' registry, LOSSES) and its backward -> the critic's loss and backward (PPO) ->
    at the optimiser step's end: a non-finite update discarded (guard.py), the critic's own optimiser step
    -> metrics

Arms differ in what they override: `rollout` (SFT: the records' answers), `_advantages` (PPO: the critic's
GAE), `loss` (SFT: cross-entropy), `critic_backward` / `critic_step` (PPO). The policy's loss is the loss
type's surrogate and normaliser (policy_loss.py, equal to TRL's _compute_loss to 1e-6), the KL in the loss,
the entropy bonus, the inter-group regulariser and a mixture-of-experts model's auxiliary loss. Knows nothing
about MLflow or YAML.
"""

from __future__ import annotations

import time

import torch
from torch import Tensor

from mlgrpo.algorithms.losses import LOSSES, masked_mean
from mlgrpo.algorithms.policy_loss import PolicyLossBatch, PolicyLossParams, nan_reduce
from mlgrpo.errors import UserError
from mlgrpo.trainers.rollout import Rollout


class TrainingStep:
    """training_step and the policy's loss of a MultilingualGRPOTrainer (TRLAdapter below it in the MRO)."""

    micro_step = 0  # micro-batches (training_step calls) since the start of training; checkpoints carry it
    buffered_rollout: list[Rollout] | None = None  # this process's micro-batches of the rollout being reused
    _step_seconds = 0.0  # wall time of the micro-batches of the optimiser step under way (TRL's step_time)

    def training_step(self, model, inputs: list[dict], num_items_in_batch=None) -> Tensor:
        """One micro-batch of an optimiser step: `inputs` are this process's prompts of the generation batch
        (HF's data loader); the loss, already divided for gradient accumulation, is returned detached."""
        started = time.perf_counter()
        model.train()
        if callable(getattr(self.optimizer, "train", None)):  # schedule-free optimisers, as HF's step
            self.optimizer.train()
        # 1. The rollout: generated, scored and given advantages every generate_every micro-batches, then
        #    reused; its rows shuffled (torch's generator, as TRL) and split into micro-batches.
        generate_every = self.args.steps_per_generation * self.num_iterations
        if self.micro_step % generate_every == 0 or self.buffered_rollout is None:
            self.use_scheduled_group_size()  # a group-size schedule's size for this rollout (scheduled_groups.py)
            rollout = self.rollout(inputs)
            self.buffered_rollout = rollout.shuffled().split(self.args.steps_per_generation)
        batch = self.buffered_rollout[self.micro_step % self.args.steps_per_generation]
        # 2. The policy's loss and its gradient; then the critic's (arms without one do nothing).
        with self.compute_loss_context_manager():
            loss = self.loss(model, batch)
        finite = bool(torch.isfinite(loss).all())
        if self.is_deepspeed_enabled and not finite:  # DeepSpeed steps inside backward(): no skipping after it
            raise UserError(f"the loss of step {self.state.global_step + 1} is {loss.item()}; under DeepSpeed mlgrpo "
                            "cannot skip an optimiser step, so the run stops before applying it. Resume from the last "
                            "checkpoint, or run without DeepSpeed, where such steps are skipped and counted")
        self.accelerator.backward(loss, **({"scale_wrt_gas": False} if self.is_deepspeed_enabled else {}))
        with self.compute_loss_context_manager():
            self.critic_backward(batch)
        self.micro_step += 1
        self._loss_finite = self._loss_finite and finite
        self._step_seconds += time.perf_counter() - started
        # 3. The optimiser step's end (HF steps the policy's optimiser right after this returns): a non-finite
        #    update discarded and counted, then the critic's own step, skipped with the policy's.
        if self.accelerator.sync_gradients:
            self._update_skipped = self._discard_nonfinite_update()
            self._loss_finite = True
            self.critic_step(skipped=self._update_skipped)
            self.record_metric("train", "step_time", self._step_seconds)
            self._step_seconds = 0.0
        return loss.detach()

    def critic_backward(self, batch: Rollout) -> None:
        """The critic's loss of the micro-batch and its gradient (PPO); nothing for critic-free arms."""

    def critic_step(self, skipped: bool) -> None:
        """The critic's optimiser and schedule step at the end of an optimiser step (PPO)."""

    # ---- the policy's loss ------------------------------------------------------------------------

    def loss(self, model, batch: Rollout) -> Tensor:
        """The micro-batch's policy loss, divided for gradient accumulation: the loss type's clipped (or soft)
        surrogate with the KL when it sits in the loss, the entropy bonus, the inter-group regulariser and a
        mixture-of-experts model's router loss, each from the registry (algorithms.losses.LOSSES)."""
        mode = "train" if self.model.training else "eval"
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        mask = batch.loss_mask
        logps, entropies, aux = self.policy_forward(model, batch)
        entropy_mask = None
        if self.top_entropy_quantile < 1.0:  # DAPO-style: only the most uncertain tokens train
            entropy_mask = self.get_high_entropy_mask(entropies, mask, 1 - self.top_entropy_quantile)
        old = logps.detach() if batch.old_logps is None else batch.old_logps
        loss, metrics = LOSSES.get("policy")(
            PolicyLossBatch(logps, old, batch.advantages, mask, batch.ref_logps, batch.sampling_logps,
                            batch.importance_weights, entropy_mask),
            self.policy_loss_params(batch, accumulation))
        metrics["entropy"] = masked_mean(entropies.detach(), mask)  # over every completion token, as TRL logs it
        if self.entropy_coef != 0.0:
            bonus, _ = LOSSES.get("entropy")(entropies, mask if entropy_mask is None else mask * entropy_mask,
                                             self.entropy_coef, accumulation)
            loss = loss + bonus
        coef = self.algorithm.advantage.inter_group_coef
        if coef != 0 and batch.regularizer is not None and mode == "train":
            # Each optimiser step carries minibatches-per-rollout times its rows' share (an unbiased estimate);
            # DDP's mean over processes is undone by multiplying by their number.
            scale = self.args.steps_per_generation / self.args.gradient_accumulation_steps * self.accelerator.num_processes
            term, term_metrics = LOSSES.get("inter_group")(logps, old, mask, batch.advantages, batch.regularizer, coef, scale)
            loss, metrics = loss + term, metrics | term_metrics
        if aux is not None:
            loss = loss + self.router_aux_loss_coef * aux / accumulation
            metrics["aux_loss"] = aux.detach()
        self.record_step_metrics(mode, metrics)
        return loss

    def policy_loss_params(self, batch: Rollout, accumulation: float) -> PolicyLossParams:
        """TRL's loss settings (GRPOConfig, as the trainer holds them) for this micro-batch."""
        step_tokens = 1.0
        if batch.batch_tokens is not None:  # the generation batch's tokens, cut to one process's optimiser step
            step_tokens = batch.batch_tokens.clamp(min=1.0).item() / self.accelerator.num_processes
            if self.model.training:
                step_tokens *= self.current_gradient_accumulation_steps / self.args.steps_per_generation
        args = self.args
        return PolicyLossParams(
            loss_type=self.loss_type, epsilon_low=self.epsilon_low, epsilon_high=self.epsilon_high, delta=args.delta,
            importance_sampling_level=self.importance_sampling_level, beta=self.beta,
            bias_correction_kl=args.use_bias_correction_kl, off_policy_threshold=self.off_policy_mask_threshold,
            sapo_temperature_pos=args.sapo_temperature_pos, sapo_temperature_neg=args.sapo_temperature_neg,
            vespo_k_pos=args.vespo_k_pos, vespo_lambda_pos=args.vespo_lambda_pos, vespo_k_neg=args.vespo_k_neg,
            vespo_lambda_neg=args.vespo_lambda_neg, max_completion_length=self.max_completion_length,
            accumulation=accumulation, step_tokens=step_tokens)

    def record_step_metrics(self, mode: str, metrics: dict[str, Tensor]) -> None:
        """The micro-batch's 0-d metrics, reduced over processes in one gather (a *_min by min, a *_max by max,
        else the mean of the processes' values; NaNs left out) and recorded for the next log."""
        names = list(metrics)
        values = torch.stack([metrics[name].detach().float().reshape(()) for name in names])
        gathered = self.accelerator.gather(values.unsqueeze(0))  # (processes, metrics)
        for name, column in zip(names, gathered.T, strict=True):
            reduce = torch.min if name.endswith("_min") else torch.max if name.endswith("_max") else torch.mean
            self.record_metric(mode, name, nan_reduce(column, reduce).item())
