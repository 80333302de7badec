"""A run resumed from its last checkpoint ends with the parameters of the uninterrupted run (issue 8).

Each case trains one run straight through, and the same run interrupted at a step boundary (as the
worker's SIGTERM handling does) then resumed by a new trainer from its last checkpoint. Measured on CPU:
the final parameters are bit-identical (max abs difference 0.0); the bound is the issue's 1e-6.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest
import torch
from transformers import TrainerCallback

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.sampling import SamplerConfig
from mlgrpo.sampling.group_schedule import GroupSwitch
from mlgrpo.trainers import AlgorithmConfig, DynamicSampling, MultilingualGRPOTrainer, PPOTrainer
from mlgrpo.trainers.checkpoints import EXTRA_STATE

from .conftest import StepsTrained, grpo_args, length_reward

PPO = AlgorithmConfig(name="ppo", advantage=AdvantageConfig(estimator="gae", std_scope="batch"))


def ja_sw_constant_reward(completions, language, **kwargs):
    """The same reward for every ja and sw completion (constant groups); the length for the others."""
    return [1.0 if lang in ("ja", "sw") else len(c) / 10 for c, lang in zip(completions, language)]


@dataclass(frozen=True)
class Case:
    trainer: type
    interrupt: int  # the run is interrupted after this step, and checkpoints every that many steps
    sampler: SamplerConfig | None = None
    algorithm: AlgorithmConfig | None = None
    settings: dict = field(default_factory=dict)  # GRPOConfig settings
    rows: int | None = None  # train on every (96 // rows)-th row only
    reward: object = length_reward
    schedule: tuple = ()  # group_schedule


# Epochs of 3 steps (6 prompts, 2 per generation batch), so that the interruptions below fall inside the
# second epoch, where the order depends on the first (the sampler's draw counts; TRL's generator).
BALANCED = SamplerConfig(name="balanced", prompts_per_epoch=6)
CASES = {
    "grpo balanced": Case(MultilingualGRPOTrainer, 4, BALANCED),
    # Rewards steer the draws; each generation is used for 2 steps and the checkpoint falls between them.
    "grpo oversample+reward buckets, mid-generation": Case(
        MultilingualGRPOTrainer, 3,
        SamplerConfig(name="oversample", oversample={"sw": 3.0}, reward_buckets=2, prompts_per_epoch=6),
        settings={"num_iterations": 2},
    ),
    "grpo with TRL's sampler": Case(MultilingualGRPOTrainer, 4, rows=6),
    "ppo balanced": Case(PPOTrainer, 4, BALANCED, PPO),
    # Constant groups refilled from the refill stream, whose position the checkpoint carries.
    "grpo dynamic sampling": Case(MultilingualGRPOTrainer, 3, BALANCED,
                                  AlgorithmConfig(dynamic_sampling=DynamicSampling(enabled=True, max_rounds=2)),
                                  reward=ja_sw_constant_reward),
    # Rollouts of 2 steps; groups of 4, then 8 from step 2: interrupted inside the first rollout of 8, which the
    # checkpoint buffers; the next rollout (step 4) is generated after the resume, with groups of 8.
    "grpo group schedule, resumed after the switch": Case(MultilingualGRPOTrainer, 3, BALANCED,
                                                          settings={"steps_per_generation": 2},
                                                          schedule=(GroupSwitch(2, 8),)),
    "ppo group schedule with TRL's sampler": Case(PPOTrainer, 3, None, PPO, settings={"steps_per_generation": 2},
                                                  rows=6, schedule=(GroupSwitch(2, 8),)),
}
STEPS = 5


class StopAfter(TrainerCallback):
    """Ends training after `step` optimiser steps, at the step boundary where the worker stops on SIGTERM."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.step:
            control.should_training_stop = True


def vector(module) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in module.parameters()])


def run(name, folder, make_model, tokenizer, dataset, *, stop=None, resume=None):
    case = CASES[name]
    args = grpo_args(folder, max_steps=STEPS, save_strategy="steps", save_steps=case.interrupt, **case.settings)
    extra = {"algorithm": case.algorithm} if case.algorithm is not None else {}
    if case.schedule:
        extra["group_schedule"] = case.schedule
    data = dataset if case.rows is None else dataset.select(range(0, len(dataset), len(dataset) // case.rows))
    trainer = case.trainer(model=make_model(), reward_funcs=[case.reward], args=args, train_dataset=data,
                           processing_class=tokenizer, sampler=case.sampler,
                           callbacks=[StopAfter(stop)] if stop else None, **extra)
    trainer.train(resume_from_checkpoint=resume)
    return trainer


@pytest.mark.parametrize("case", CASES)
def test_a_resumed_run_ends_with_the_uninterrupted_parameters(case, tmp_path, make_model, tokenizer, dataset,
                                                               reliability):
    interrupt = CASES[case].interrupt
    whole = run(case, tmp_path / "whole", make_model, tokenizer, dataset)
    stopped = run(case, tmp_path / "resumed", make_model, tokenizer, dataset, stop=interrupt)
    at_checkpoint = vector(stopped.model)
    checkpoint = tmp_path / "resumed" / f"checkpoint-{interrupt}"
    resumed = run(case, tmp_path / "resumed", make_model, tokenizer, dataset, resume=str(checkpoint))
    assert resumed.state.global_step == STEPS
    assert (vector(resumed.model) - at_checkpoint).abs().max() > 1e-5  # it trained after the resume
    assert (vector(resumed.model) - vector(whole.model)).abs().max() <= 1e-6
    if isinstance(whole, PPOTrainer):
        assert (vector(resumed.critic) - vector(whole.critic)).abs().max() <= 1e-6
    difference = float((vector(resumed.model) - vector(whole.model)).abs().max())
    reliability.record("fault", f"resume from checkpoint vs uninterrupted run ({case})", "survived",
                       max_abs_param_difference=difference)


@pytest.mark.parametrize("case", ["grpo balanced", "ppo balanced"])
def test_a_run_resumed_from_its_last_steps_checkpoint_trains_no_further_step(case, tmp_path, make_model, tokenizer,
                                                                           dataset):
    """A worker that died after the last step's checkpoint (in its final evaluation; a Ray node lost) resumes
    with the trained model and step count, and trains no step max_steps + 1 as HF's loop would."""
    whole = run(case, tmp_path / "whole", make_model, tokenizer, dataset)
    trained = StepsTrained()
    args = grpo_args(tmp_path / "whole", max_steps=STEPS, save_strategy="steps", save_steps=CASES[case].interrupt)
    extra = {"algorithm": CASES[case].algorithm} if CASES[case].algorithm is not None else {}
    resumed = CASES[case].trainer(model=make_model(), reward_funcs=[length_reward], args=args, train_dataset=dataset,
                                  processing_class=tokenizer, sampler=CASES[case].sampler, callbacks=[trained], **extra)
    assert (vector(resumed.model) - vector(whole.model)).abs().max() > 1e-5  # a fresh model, before the resume
    resumed.train(resume_from_checkpoint=str(tmp_path / "whole" / f"checkpoint-{STEPS}"))
    assert trained.steps == [] and resumed.state.global_step == STEPS
    assert (vector(resumed.model) - vector(whole.model)).abs().max() == 0.0


def test_without_mlgrpos_checkpoint_state_the_resumed_run_differs(tmp_path, make_model, tokenizer, dataset):
    """What the state is for: without it, the reward-steered draws (and the half-used generation) differ."""
    case = "grpo oversample+reward buckets, mid-generation"
    interrupt = CASES[case].interrupt
    whole = run(case, tmp_path / "whole", make_model, tokenizer, dataset)
    run(case, tmp_path / "resumed", make_model, tokenizer, dataset, stop=interrupt)
    checkpoint = tmp_path / "resumed" / f"checkpoint-{interrupt}"
    os.remove(checkpoint / EXTRA_STATE.format(rank=0))
    resumed = run(case, tmp_path / "resumed", make_model, tokenizer, dataset, resume=str(checkpoint))
    assert (vector(resumed.model) - vector(whole.model)).abs().max() > 1e-5
