"""The training step: one function from rollout to metrics, that every arm shares, over the Rollout record."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import torch

import mlgrpo.trainers
from mlgrpo.trainers import MultilingualGRPOTrainer
from mlgrpo.trainers.step import TrainingStep

from .conftest import grpo_args, length_reward

TRAINERS = Path(mlgrpo.trainers.__file__).parent


def test_the_step_is_one_function_every_arm_resolves_to():
    lines = inspect.getsource(TrainingStep.training_step).splitlines()
    assert len(lines) <= 100, f"training_step has {len(lines)} lines"
    for name, cls in mlgrpo.trainers.TRAINERS.items():  # no mixin or arm has a training step of its own
        assert next(k for k in cls.__mro__ if "training_step" in vars(k)) is TrainingStep, name


def test_no_trainer_module_is_over_400_lines_or_keeps_rows_aside():
    for path in TRAINERS.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 400, path.name
        assert not re.search(r"self\._rows\b", text), path.name


class Seen(MultilingualGRPOTrainer):
    """Each rollout the step generated, and each micro-batch its loss saw."""

    def rollout(self, inputs):
        record = super().rollout(inputs)
        self.rollouts = getattr(self, "rollouts", []) + [record]
        return record

    def loss(self, model, batch):
        self.batches = getattr(self, "batches", []) + [batch]
        return super().loss(model, batch)


def test_a_rollout_is_generated_once_and_each_epoch_trains_every_row_once(tmp_path, make_model, tokenizer, dataset):
    # 2 micro-batches a rollout, 2 epochs over it: micro-steps 0-3 train on rollout 1, 4-7 on rollout 2
    args = grpo_args(tmp_path, max_steps=8, steps_per_generation=2, num_iterations=2, gradient_accumulation_steps=1)
    trainer = Seen(model=make_model(), reward_funcs=[length_reward], args=args, train_dataset=dataset,
                   processing_class=tokenizer)
    trainer.train()
    assert len(trainer.rollouts) == 2 and len(trainer.batches) == 8
    for k, rollout in enumerate(trainer.rollouts):
        epochs = [trainer.batches[4 * k:4 * k + 2], trainer.batches[4 * k + 2:4 * k + 4]]
        for epoch in epochs:  # the same split reused: every row of the rollout once per epoch
            rows = sorted(map(tuple, torch.cat([b.completion_ids for b in epoch]).tolist()))
            assert rows == sorted(map(tuple, rollout.completion_ids.tolist()))
        assert epochs[0][0] is epochs[1][0]
    logged = [entry for entry in trainer.state.log_history if "step_time" in entry]
    assert logged and all(entry["step_time"] > 0 for entry in logged)
