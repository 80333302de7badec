"""Skipping optimiser steps whose loss or gradient is non-finite, and counting them (issue 8).

A NaN or inf that reaches the optimiser corrupts every parameter it touches for the rest of the run;
HF's Trainer only keeps it out of the logged loss (`logging_nan_inf_filter`). `NonfiniteStepGuard` is a
mixin of MultilingualGRPOTrainer, whose training step (step.py) asks it at the end of each optimiser
step; it discards the step's gradients when any of its micro-batches had a non-finite loss or
the accumulated gradient is non-finite, counts the step, and logs the running count as
`nonfinite_loss_steps` (MLflow: `train/nonfinite_loss_steps`). Knows nothing about GRPO, PPO or MLflow.
"""

from __future__ import annotations

import logging

import torch

NONFINITE_STEPS = "nonfinite_loss_steps"  # optimiser steps skipped so far (a running count)

log = logging.getLogger(__name__)


class NonfiniteStepGuard:
    """The check at the end of an optimiser step (`_discard_nonfinite_update`, called by step.py's training
    step with `_loss_finite`, whether every micro-batch's loss was finite) and the running count in `log`.

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
