"""The group-size schedule: how many completions per prompt (G) each rollout draws, and its index layout.

The method notes grow the group during training (32 -> 64) against advantage drift. A schedule is a list of
switches (optimiser step -> group size); the size before the first switch is the run's num_generations.
Every rollout keeps the same number of completions, so a larger group means fewer distinct prompts per
rollout, the optimiser steps and the rollout budget of every arm (PPO's included) stay the same:

    rollout r starts at optimiser step r x steps_per_rollout -> G_r = the size in force at that step
    (a switch inside a rollout takes effect at the next one) -> P_r = rollout rows / G_r prompts from one
    prompt stream (TRL's shuffled order, or the language sampler's draws) -> each prompt G_r times in a row,
    the block repeated repeat_count times (TRL's RepeatSampler layout, one rollout at a time)

A rollout's prompts are a pure function of its index: P_0 + ... + P_{r-1} prompts of the stream come before
it. An epoch is a fixed number of rollouts, so HF's epoch arithmetic and its skipping of trained batches on
resume see a sampler of constant length; epoch e seeks the stream to its first rollout (replaying it from
the start when needed), which is what makes a resumed run read the uninterrupted order.
Knows nothing about models, TRL or MLflow.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from torch.utils.data import Sampler

from mlgrpo.errors import UserError


@dataclass(frozen=True)
class GroupSwitch:
    """From optimiser step `step` on (rounded up to a rollout's start), groups of `size` completions."""

    step: int
    size: int


def group_size_at(switches: Sequence[GroupSwitch], initial: int, rollout: int, steps_per_rollout: int) -> int:
    """G of rollout `rollout` (0-based): the size of the last switch at or before the step the rollout starts at.

    Hand-worked: initial 4, switches [(50, 8)], 4 optimiser steps per rollout: rollout 12 starts at step 48 ->
    4; rollout 13 starts at step 52 >= 50 -> 8 (the switch at step 50 falls inside rollout 12, so waits).
    """
    start, size = rollout * steps_per_rollout, initial
    for switch in switches:
        if switch.step <= start:
            size = switch.size
    return size


def switches_in_force(switches: Sequence[GroupSwitch], initial: int, steps_per_rollout: int) -> list[GroupSwitch]:
    """The schedule as the trainer runs it: each switch at the first rollout start at or after its step, one
    entry per change, from step 0. Hand-worked: initial 4, [(0, 4), (50, 8), (51, 16)], 4 steps per rollout ->
    50 and 51 both round up to 52, the later wins -> [(0, 4), (52, 16)]."""
    out = [GroupSwitch(0, initial)]
    for switch in switches:
        step = -(-switch.step // steps_per_rollout) * steps_per_rollout
        if step == out[-1].step:
            out[-1] = GroupSwitch(step, switch.size)
        elif switch.size != out[-1].size:
            out.append(GroupSwitch(step, switch.size))
    return [s for i, s in enumerate(out) if i == 0 or s.size != out[i - 1].size]


def check_schedule(switches: Sequence[GroupSwitch], initial: int, rows: dict[str, int], where: str = "group_schedule") -> None:
    """Steps increasing from >= 0, sizes >= 2, a step-0 entry equal to `initial`, and every size dividing each
    of `rows` (name -> completions that must hold whole groups: a rollout, one process's share of it)."""
    previous = -1
    for i, switch in enumerate(switches):
        at = f"{where}[{i}]"
        if isinstance(switch.step, bool) or not isinstance(switch.step, int) or switch.step <= previous:
            raise UserError(f"{at}: step {switch.step!r} must be a whole number above the previous entry's ({previous}); "
                            "list the switches in increasing step order")
        previous = switch.step
        if isinstance(switch.size, bool) or not isinstance(switch.size, int) or switch.size < 2:
            raise UserError(f"{at}: size {switch.size!r} must be a whole number >= 2 (a group of one has nothing to compare)")
        if switch.step == 0 and switch.size != initial:
            raise UserError(f"{at}: size {switch.size} at step 0 but num_generations is {initial}; they name the same "
                            f"group size: set num_generations {switch.size} or drop the step-0 entry")
        for name, count in rows.items():
            if count % switch.size:
                divisors = [d for d in range(2, count + 1) if count % d == 0]
                raise UserError(f"{at}: size {switch.size} does not divide the {count} completions of {name}, so a "
                                f"group would be split; use one of {', '.join(map(str, divisors[:8]))}")


class ScheduledGroupSampler(Sampler[int]):
    """Dataset indices in TRL's RepeatSampler layout with each rollout's own group size.

    stream:          builds a fresh prompt stream (a sampler yielding one dataset index per prompt, epoch after
                     epoch); the same calls must give the same stream (no reward-dependent draws).
    size_of:         rollout index -> G (group_size_at with the run's schedule).
    rows:            completions per rollout (TRL's generation_batch_size); every G divides it.
    repeat_count:    how often a rollout's block is repeated (num_iterations x steps_per_generation).
    rollouts_per_epoch: rollouts per epoch of this sampler (constant, so len() is).
    """

    def __init__(self, stream: Callable[[], Sampler[int]], size_of: Callable[[int], int], *, rows: int,
                 repeat_count: int, rollouts_per_epoch: int) -> None:
        if rollouts_per_epoch < 1:
            raise UserError("an epoch holds no rollout: the data has fewer prompts than one rollout needs")
        self._new_stream, self.size_of = stream, size_of
        self.rows, self.repeat_count, self.rollouts_per_epoch = rows, repeat_count, rollouts_per_epoch
        self._epoch = 0
        self._stream: Sampler[int] | None = None
        self._iterator: Iterator[int] | None = None
        self._position = 0  # prompts taken from the current stream

    def __len__(self) -> int:
        return self.rollouts_per_epoch * self.rows * self.repeat_count

    def set_epoch(self, epoch: int) -> None:
        self._epoch = epoch

    @property
    def stream(self) -> Sampler[int] | None:
        """The prompt stream being read (None before the first epoch)."""
        return self._stream

    def prompt_offset(self, rollout: int) -> int:
        """Prompts of the stream before rollout `rollout`."""
        return sum(self.rows // self.size_of(r) for r in range(rollout))

    def __iter__(self) -> Iterator[int]:
        epoch, self._epoch = self._epoch, self._epoch + 1
        first = epoch * self.rollouts_per_epoch
        self._seek(self.prompt_offset(first))
        return itertools.chain.from_iterable(self._block(r) for r in range(first, first + self.rollouts_per_epoch))

    def _block(self, rollout: int) -> list[int]:
        size = self.size_of(rollout)
        prompts = self._take(self.rows // size)
        return [i for i in prompts for _ in range(size)] * self.repeat_count

    def _seek(self, offset: int) -> None:
        if self._stream is None or offset < self._position:  # back in the stream: replay it from its start
            self._stream, self._iterator, self._position = self._new_stream(), None, 0
        self._take(offset - self._position)

    def _take(self, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n:
            fresh = self._iterator is None
            if fresh:
                self._iterator = iter(self._stream)
            chunk = list(itertools.islice(self._iterator, n - len(out)))
            if not chunk and fresh:
                raise UserError("the prompt stream yields no prompts; check the training data")
            if len(chunk) < n - len(out):
                self._iterator = None  # the stream's epoch ended: the next one continues it
            out += chunk
        self._position += n
        return out
