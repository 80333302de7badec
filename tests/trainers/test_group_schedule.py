"""The group-size schedule in the trainers: each rollout's groups whole and of the scheduled size, the same
number of completions per step, PPO on the same schedule, and the refused combinations."""

from __future__ import annotations

import pytest

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.errors import UserError
from mlgrpo.sampling import SamplerConfig
from mlgrpo.sampling.group_schedule import GroupSwitch
from mlgrpo.trainers import AlgorithmConfig, DynamicSampling, MultilingualGRPOTrainer, PPOTrainer
from mlgrpo.trainers.sft import SupervisedTrainer

from .conftest import grpo_args, length_reward

PPO = AlgorithmConfig(name="ppo", advantage=AdvantageConfig(estimator="gae", std_scope="batch"))
# Rollouts of 2 optimiser steps (16 completions): G 4 at steps 0-1 (4 prompts), G 8 from step 2 (2 prompts);
# the switch at step 1 falls inside the first rollout, so it waits for step 2.
SCHEDULE = (GroupSwitch(1, 8),)


class Recording:
    """Mixin: what each training rollout was generated with."""

    def rollout(self, inputs):
        output = super().rollout(inputs)
        if self.model.training:
            self.rollouts.append((self.state.global_step, self.num_generations, [x["prompt"] for x in inputs],
                                  output.rows))
        return output


class GRPO(Recording, MultilingualGRPOTrainer):
    rollouts: list


class PPO_(Recording, PPOTrainer):
    rollouts: list


class SFT_(Recording, SupervisedTrainer):
    rollouts: list


@pytest.mark.parametrize("trainer, algorithm, sampler", [
    (GRPO, None, None),
    (PPO_, PPO, SamplerConfig(name="balanced", prompts_per_epoch=8)),
    (SFT_, AlgorithmConfig(name="sft"), None),  # the SFT control reads the same prompts, G copies each
])
@pytest.mark.slow
def test_each_rollout_has_whole_groups_of_the_scheduled_size(trainer, algorithm, sampler, tmp_path, make_model,
                                                             tokenizer, dataset):
    args = grpo_args(tmp_path, steps_per_generation=2, max_steps=6)
    extra = {} if algorithm is None else {"algorithm": algorithm}
    t = trainer(model=make_model(), reward_funcs=[length_reward], args=args, train_dataset=dataset,
                processing_class=tokenizer, sampler=sampler, group_schedule=SCHEDULE, **extra)
    t.rollouts = []
    t.train()
    assert [(step, size) for step, size, _, _ in t.rollouts] == [(0, 4), (2, 8), (4, 8)]
    for _, size, prompts, completions in t.rollouts:
        assert completions == 16  # the same completions per rollout, hence per optimiser step
        groups = [prompts[i : i + size] for i in range(0, len(prompts), size)]
        assert all(len(g) == size and len(set(g)) == 1 for g in groups)  # whole groups of one prompt
        assert len(groups) == 16 // size
    if trainer is not SFT_:  # the SFT arm logs its own metrics (sft/*), not the rollout's
        logged = [h["group_size"] for h in t.state.log_history if "group_size" in h]
        assert logged == [4.0, 8.0, 8.0]  # logged with each rollout


@pytest.mark.parametrize("settings, message", [
    ({"schedule": (GroupSwitch(2, 3),)}, "group_schedule[0]: size 3 does not divide the 16 completions of a rollout"),
    ({"algorithm": AlgorithmConfig(dynamic_sampling=DynamicSampling(enabled=True))},
     "a group-size schedule cannot be combined with algorithm.dynamic_sampling"),
    ({"sampler": SamplerConfig(name="balanced", reward_buckets=2)},
     "a group-size schedule cannot be combined with sampler.reward_buckets"),
])
def test_unsound_schedules_are_refused(settings, message, tmp_path, make_model, tokenizer, dataset):
    extra = {"algorithm": settings["algorithm"]} if "algorithm" in settings else {}
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        MultilingualGRPOTrainer(model=make_model(), reward_funcs=[length_reward],
                                args=grpo_args(tmp_path, steps_per_generation=2), train_dataset=dataset,
                                processing_class=tokenizer, sampler=settings.get("sampler"),
                                group_schedule=settings.get("schedule", SCHEDULE), **extra)
