"""The group-size schedule in MultilingualGRPOTrainer (and so in PPO and SFT): each rollout with its own G.

    optimiser step -> its rollout (step // steps_per_rollout) -> G of that rollout (sampling/group_schedule.py)
      -> the sampler: the rollout's indices, generation_batch_size / G prompts each G times (ScheduledGroupSampler)
      -> _prepare_inputs: trainer.num_generations = G before TRL generates and groups the rollout
         (trl_adapter.set_group_size: TRL reads the attribute afresh at each generation)
      -> mlgrpo's group keys (_group_keys) and TRL's reward_std read the same attribute

A rollout's G is a pure function of its index and its prompts of the prompt stream, so a resumed run reads
the uninterrupted order (the checkpoint's buffered rollout, and the epoch set on resume, do the rest).
Refused where a G is fixed elsewhere: dynamic sampling's refill stream, reward-stratified draws (not
replayable), TRL's iterable-dataset stream, and a rollout that would start inside an optimiser step.
Knows nothing about MLflow or YAML.
"""

from __future__ import annotations

from trl.trainer.utils import RepeatSampler

from mlgrpo.errors import UserError
from mlgrpo.sampling import LanguageSampler
from mlgrpo.sampling.group_schedule import ScheduledGroupSampler, check_schedule, group_size_at
from mlgrpo.trainers.config import group_schedule_conflict
from mlgrpo.trainers.trl_adapter import set_group_size


class ScheduledGroups:
    """Mixin of MultilingualGRPOTrainer; `group_schedule` (GroupSwitch entries) is set by its __init__."""

    group_schedule: tuple = ()
    _scheduled_sampler: ScheduledGroupSampler | None = None

    def _check_group_schedule(self) -> None:
        """A schedule whose every size fits the batch layout, with the settings it is sound with."""
        if not self.group_schedule:
            return
        per_rank = self.args.per_device_train_batch_size * self.args.steps_per_generation
        rows = {"a rollout (generation_batch_size)": self.args.generation_batch_size,
                "one process's share of a rollout (per_device_train_batch_size x steps_per_generation)": per_rank}
        check_schedule(self.group_schedule, self.args.num_generations, rows)
        generate_every = self.args.steps_per_generation * self.num_iterations
        conflict = group_schedule_conflict(self.algorithm, self.sampler_config)
        if conflict is None and not hasattr(self.train_dataset, "__getitem__"):
            conflict = "an iterable dataset"  # TRL's get_train_dataloader lays its stream out with one G
        if conflict is None and generate_every % self.args.gradient_accumulation_steps:
            conflict = "steps_per_generation x num_iterations not a multiple of gradient_accumulation_steps"
        if conflict is not None:
            raise UserError(f"a group-size schedule cannot be combined with {conflict} yet; remove the schedule "
                            "or that setting")

    @property
    def steps_per_rollout(self) -> int:
        """Optimiser steps per rollout (the update schedule's minibatches x epochs)."""
        generate_every = self.args.steps_per_generation * self.num_iterations
        return max(1, generate_every // self.args.gradient_accumulation_steps)

    def group_size_of_rollout(self, rollout: int) -> int:
        return group_size_at(self.group_schedule, self.args.num_generations, rollout, self.steps_per_rollout)

    def use_scheduled_group_size(self) -> None:
        """The one place the group size changes: the training step calls it before generating a rollout,
        which reads it (nothing without a schedule)."""
        if self.group_schedule:
            set_group_size(self, self.group_size_of_rollout(self.state.global_step // self.steps_per_rollout))

    def _scheduled_train_sampler(self, dataset) -> ScheduledGroupSampler:
        """Each rollout laid out with its own group size, the prompts from the run's prompt stream: the
        language sampler's draws (one prompt per draw), or TRL's shuffled order."""
        if self.sampler_config is None:
            def stream():
                return RepeatSampler(dataset, mini_repeat_count=1, shuffle=self.shuffle_dataset, seed=self.args.seed)
            epoch_prompts = len(dataset)
        else:
            def stream():
                return LanguageSampler(dataset[self.language_column], self.sampler_config, mini_repeat_count=1)
            epoch_prompts = len(stream())
        rows, repeats = self.args.generation_batch_size, self.num_iterations * self.args.steps_per_generation
        self._scheduled_sampler = ScheduledGroupSampler(
            stream, self.group_size_of_rollout, rows=rows, repeat_count=repeats,
            rollouts_per_epoch=epoch_prompts // (rows // self.args.num_generations),
        )
        return self._scheduled_sampler
