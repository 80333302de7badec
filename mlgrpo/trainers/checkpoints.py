"""Checkpoints that resume exactly: what HF's Trainer and TRL leave out of a checkpoint, saved and restored.

A mixin of MultilingualGRPOTrainer (and so of PPOTrainer). Each process writes its own state file into
every checkpoint, last and atomically, so that its presence marks a checkpoint the trainer finished
writing (a run killed while saving leaves a folder without it, which resuming passes over).
Knows nothing about MLflow or YAML.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import torch
from torch import Tensor

from mlgrpo.errors import UserError
from mlgrpo.trainers.guard import NONFINITE_STEPS
from mlgrpo.trainers.rollout import Rollout

EXTRA_STATE = "mlgrpo_state_rank{rank}.pt"  # per process, in every checkpoint: see ResumableState._extra_state

log = logging.getLogger(__name__)


def complete_checkpoint(folder: str | os.PathLike) -> bool:
    """True when `folder` is a checkpoint the trainer finished writing: HF's files, then (last) mlgrpo's
    state file of the main process. A run killed while saving leaves a folder without it."""
    return os.path.isfile(os.path.join(folder, EXTRA_STATE.format(rank=0)))


class ResumableState:
    """save_state / load_state of a MultilingualGRPOTrainer (trl_adapter: after HF saved or restored its
    own), with mlgrpo's state."""

    def save_state(self, folder: str) -> None:
        super().save_state(folder)
        path = os.path.join(folder, EXTRA_STATE.format(rank=self.accelerator.process_index))
        torch.save(self._extra_state(), path + ".tmp")
        # Written last and atomically: its presence marks a finished checkpoint (see complete_checkpoint).
        os.replace(path + ".tmp", path)

    def _extra_state(self) -> dict:
        """What resuming needs beyond HF's checkpoint (weights, optimiser, scheduler, RNG, trainer state).

        trl_step, buffered_inputs: HF's loop counts micro-steps from 0 again and the step (step.py) generates
            anew when its buffer is empty, so a checkpoint taken while a rollout is still being reused
            (steps_per_generation above gradient_accumulation_steps, or num_iterations > 1) would resume with
            new rollouts from newer weights. The buffer is this process's micro-batches (Rollout.state), saved
            only then.
        sampler: the language sampler's history (draw counts, rewards, the epoch in progress), on which its
            next draws depend; HF's skipping of trained batches cannot rebuild it (sampling/sampler.py).
        nonfinite_loss_steps: the running count of skipped steps.
        refill_batches: how many batches of fresh prompts dynamic sampling drew (trainers/dynamic.py); its
            stream is replayed to there.
        """
        generate_every = self.args.steps_per_generation * self.num_iterations
        sampler = None if self._language_sampler is None else self._language_sampler.state_dict()
        return {
            "processes": self.accelerator.num_processes,
            "trl_step": self.micro_step,
            "buffered_inputs": [batch.state() for batch in self.buffered_rollout] if self.micro_step % generate_every else None,
            "sampler": None if sampler is None else {k: _to_torch(v) for k, v in sampler.items()},
            NONFINITE_STEPS: self._nonfinite_steps,
            "refill_batches": self._refill_position(),
        }

    def load_state(self, checkpoint: str) -> None:
        super().load_state(checkpoint)
        # The epoch HF resumes in: it skips to it without set_epoch.
        for sampler in (self._repeat_sampler, self._scheduled_sampler):
            if sampler is not None:
                sampler.set_epoch(int(self.state.epoch))
        path = os.path.join(checkpoint, EXTRA_STATE.format(rank=self.accelerator.process_index))
        if not os.path.exists(path):
            log.warning("checkpoint %s has no %s (written by an older mlgrpo or by fewer processes): the run resumes, "
                        "but its prompt order and next rollouts can differ from an uninterrupted run's", checkpoint,
                        os.path.basename(path))
            return
        state = torch.load(path, weights_only=True, map_location="cpu")
        self.micro_step, self._nonfinite_steps = state["trl_step"], state[NONFINITE_STEPS]
        self._seek_refill(state.get("refill_batches", 0))
        if state["processes"] != self.accelerator.num_processes:
            log.warning("checkpoint %s was written by %d processes, this run has %d: rollouts buffered at the "
                        "checkpoint are dropped and generated again", checkpoint, state["processes"],
                        self.accelerator.num_processes)
        elif state["buffered_inputs"] is not None:
            device = self.accelerator.device
            self.buffered_rollout = [Rollout.from_state(batch).to(device) for batch in state["buffered_inputs"]]
        if self._language_sampler is not None:
            if state["sampler"] is None:
                raise UserError(f"checkpoint {checkpoint} was written without the language sampler; resume with the "
                                "sampler settings the run started with")
            self._language_sampler.load_state_dict({k: _to_numpy(v) for k, v in state["sampler"].items()})


def _to_torch(value):
    # torch.load(weights_only=True) reads tensors, not numpy arrays.
    return torch.from_numpy(value) if isinstance(value, np.ndarray) else value


def _to_numpy(value):
    return value.numpy() if isinstance(value, Tensor) else value
