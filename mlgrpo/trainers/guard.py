"""Skipping optimiser steps whose loss or gradient is non-finite, and counting them (issue 8).

A NaN or inf that reaches the optimiser corrupts every parameter it touches for the rest of the run;
HF's Trainer only keeps it out of the logged loss (`logging_nan_inf_filter`). `NonfiniteStepGuard` is a
mixin for an HF Trainer subclass (`class T(NonfiniteStepGuard, trl.GRPOTrainer)`): at the end of each
optimiser step it discards the step's gradients when any of its micro-batches had a non-finite loss or
the accumulated gradient is non-finite, counts the step, and logs the running count as
`nonfinite_loss_steps` (MLflow: `train/nonfinite_loss_steps`). Knows nothing about GRPO, PPO or MLflow.
"""

from __future__ import annotations

import logging

import torch

from mlgrpo.errors import UserError

NONFINITE_STEPS = "nonfinite_loss_steps"  # optimiser steps skipped so far (a running count)

log = logging.getLogger(__name__)


class NonfiniteStepGuard:
    """training_step, compute_loss and log of an HF Trainer, guarded against non-finite updates.

    The whole optimiser step is discarded, not only the bad micro-batch: gradients accumulate in place,
    and a NaN added to them cannot be taken out again. Discarding sets every guarded gradient to None,
    so the optimiser (AdamW skips parameters without a gradient) leaves the parameters and its own state
    untouched. The step still counts: global_step and the learning-rate schedule advance as for any step.
    Subclasses that step other parameters (PPO's critic) add them in `_guarded_parameters` and skip their
    own optimiser when `_update_skipped` is set.
    """

    _nonfinite_steps = 0  # steps skipped so far; checkpoints carry it (checkpoints.ResumableState)
    _loss_finite = True  # every micro-batch of the optimiser step under way had a finite loss
    _update_skipped = False  # the last optimiser step was discarded

    def training_step(self, model, inputs, num_items_in_batch):
        loss = super().training_step(model, inputs, num_items_in_batch)
        self._loss_finite = self._loss_finite and bool(torch.isfinite(loss).all())
        if self.accelerator.sync_gradients:  # HF sets it for the micro-batch that ends an optimiser step
            self._update_skipped = self._discard_nonfinite_update()
            self._loss_finite = True
        return loss

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss = super().compute_loss(model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)
        value = loss[0] if return_outputs else loss
        if self.is_deepspeed_enabled and self.model.training and not torch.isfinite(value).all():
            # DeepSpeed takes its optimiser step inside backward(), so it cannot be skipped afterwards.
            raise UserError(
                f"the loss of step {self.state.global_step + 1} is {value.item()}; under DeepSpeed mlgrpo cannot skip "
                "an optimiser step, so the run stops before applying it. Resume from the last checkpoint, or run "
                "without DeepSpeed, where such steps are skipped and counted"
            )
        return loss

    def _discard_nonfinite_update(self) -> bool:
        params = self._guarded_parameters()
        grads = [p.grad for p in params if p.grad is not None]
        # A total norm that overflows float32 (> 3e38) counts as non-finite too: no sane step has one.
        finite = self._loss_finite and (not grads or bool(torch.isfinite(torch.nn.utils.get_total_norm(grads))))
        # Every process must decide alike, or their parameters part (a loss can be NaN on one rank only).
        bad = self.accelerator.reduce(torch.tensor(float(not finite), device=self.accelerator.device), reduction="sum")
        if bad.item() == 0:
            return False
        for param in params:
            param.grad = None
        self._nonfinite_steps += 1
        log.warning("step %d: non-finite loss or gradient; the update was skipped (%d skipped so far)",
                    self.state.global_step + 1, self._nonfinite_steps)
        return True

    def _guarded_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters whose gradients the optimiser step applies."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self.model.training:  # a running count, so that a skipped step shows whatever logging_steps is
            logs = {**logs, NONFINITE_STEPS: float(self._nonfinite_steps)}
        super().log(logs, start_time)
