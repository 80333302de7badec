"""A step whose loss turns NaN is skipped and counted; it never reaches the weights (issue 8)."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import TrainerCallback

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.trainers import AlgorithmConfig, MultilingualGRPOTrainer, PPOTrainer
from mlgrpo.trainers.guard import NONFINITE_STEPS

from .conftest import grpo_args, length_reward

PPO = AlgorithmConfig(name="ppo", advantage=AdvantageConfig(estimator="gae", std_scope="batch"))
NAN_CALL = 3  # training loss calls 0, 1 make step 1 and 2, 3 make step 2 (2 micro-batches a step)


def nan_loss_on_call(base):
    """`base` whose policy loss is NaN on the NAN_CALL-th training micro-batch: the second micro-batch of
    step 2, so that a finite micro-batch's gradient is already accumulated when the NaN arrives."""

    class NaNLoss(base):
        calls = 0

        def loss(self, model, batch):
            loss = super().loss(model, batch)
            if self.model.training:
                self.calls += 1
                if self.calls - 1 == NAN_CALL:
                    return loss * float("nan")
            return loss

    return NaNLoss


class Snapshots(TrainerCallback):
    """Parameters and optimiser states at the start and after every optimiser step."""

    def __init__(self, trainer) -> None:
        self.trainer, self.taken = trainer, []

    def take(self) -> None:
        ppo = isinstance(self.trainer, PPOTrainer)
        modules = [self.trainer.model] + ([self.trainer.critic] if ppo else [])
        optimizers = [self.trainer.optimizer] + ([self.trainer.critic_optimizer] if ppo else [])
        params = torch.cat([p.detach().flatten().clone() for m in modules for p in m.parameters()])
        self.taken.append((params, [copy.deepcopy(o.state_dict()["state"]) for o in optimizers]))

    def on_train_begin(self, args, state, control, **kwargs):
        self.take()

    def on_step_end(self, args, state, control, **kwargs):
        self.take()


@pytest.mark.parametrize("base, algorithm", [(MultilingualGRPOTrainer, None), (PPOTrainer, PPO)], ids=["grpo", "ppo"])
def test_a_nan_loss_skips_the_whole_step_and_is_counted(base, algorithm, tmp_path, make_model, tokenizer, dataset,
                                                         reliability):
    extra = {"algorithm": algorithm} if algorithm is not None else {}
    trainer = nan_loss_on_call(base)(model=make_model(), reward_funcs=[length_reward], processing_class=tokenizer,
                                     args=grpo_args(tmp_path, max_steps=3, gradient_accumulation_steps=2),
                                     train_dataset=dataset, **extra)
    snapshots = Snapshots(trainer)
    trainer.add_callback(snapshots)
    trainer.train()
    (start, _), (after_1, state_1), (after_2, state_2), (after_3, _) = snapshots.taken
    assert (after_1 - start).abs().max() > 1e-5  # step 1 trained
    assert torch.equal(after_2, after_1)  # step 2 (NaN in its second micro-batch) changed nothing ...
    for before, after in zip(state_1, state_2):  # ... in the optimisers either (PPO: the critic's too)
        for index, values in before.items():
            for key, value in values.items():
                assert torch.equal(after[index][key], value), key
    assert torch.isfinite(after_3).all() and (after_3 - after_2).abs().max() > 1e-5  # and step 3 trained
    counts = [entry[NONFINITE_STEPS] for entry in trainer.state.log_history if "loss" in entry]
    assert counts == [0.0, 1.0, 1.0]
    assert trainer.state.global_step == 3
    reliability.record("fault", f"NaN loss in one micro-batch ({base.__name__}): step skipped, weights kept", "survived")
