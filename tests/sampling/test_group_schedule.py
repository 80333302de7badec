"""The group-size schedule: hand-worked sizes per rollout, rounding to rollout starts, and the layout."""

from __future__ import annotations

import pytest
from torch.utils.data import Sampler

from mlgrpo.errors import UserError
from mlgrpo.sampling.group_schedule import (
    GroupSwitch, ScheduledGroupSampler, check_schedule, group_size_at, switches_in_force,
)  # fmt: skip

GROW = (GroupSwitch(0, 4), GroupSwitch(50, 8))


def test_a_switch_inside_a_rollout_waits_for_the_next_rollout():
    # 4 optimiser steps per rollout: rollout 12 starts at step 48 (< 50) -> 4, rollout 13 at 52 -> 8.
    assert [group_size_at(GROW, 4, r, 4) for r in (0, 12, 13, 14)] == [4, 4, 8, 8]
    # One step per rollout: the switch is exact.
    assert [group_size_at(GROW, 4, r, 1) for r in (49, 50)] == [4, 8]


def test_switches_in_force_are_rounded_up_to_rollout_starts():
    assert switches_in_force(GROW, 4, 4) == [GroupSwitch(0, 4), GroupSwitch(52, 8)]
    # 50 and 51 both round up to 52; the later entry wins there.
    assert switches_in_force((GroupSwitch(50, 8), GroupSwitch(51, 16)), 4, 4) == [GroupSwitch(0, 4), GroupSwitch(52, 16)]
    assert switches_in_force((), 4, 4) == [GroupSwitch(0, 4)]


@pytest.mark.parametrize("switches, message", [
    ((GroupSwitch(0, 4), GroupSwitch(50, 6)), "group_schedule[1]: size 6 does not divide the 64 completions of a "
                                              "rollout, so a group would be split; use one of 2, 4, 8, 16, 32, 64"),
    ((GroupSwitch(0, 8),), "group_schedule[0]: size 8 at step 0 but num_generations is 4"),
    ((GroupSwitch(50, 8), GroupSwitch(50, 16)), "group_schedule[1]: step 50 must be a whole number above the previous"),
    ((GroupSwitch(10, 1),), "group_schedule[0]: size 1 must be a whole number >= 2"),
])
def test_schedules_that_break_the_batch_are_refused_in_one_line(switches, message):
    with pytest.raises(UserError) as info:
        check_schedule(switches, 4, {"a rollout": 64})
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


class Stream(Sampler[int]):
    """Prompts 0..n-1 in order, every epoch."""

    def __init__(self, n: int) -> None:
        self.n, self.created = n, 0

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


def test_each_rollout_holds_whole_groups_of_its_size_and_the_same_number_of_completions():
    # 8 completions a rollout, repeated twice (2 micro-batches); G 2 for rollouts 0-1, then G 4.
    stream = Stream(5)
    sampler = ScheduledGroupSampler(lambda: stream, lambda r: 2 if r < 2 else 4, rows=8, repeat_count=2,
                                    rollouts_per_epoch=2)
    epoch0, epoch1 = list(sampler), list(sampler)
    assert len(epoch0) == len(epoch1) == len(sampler) == 32
    # rollout 0: prompts 0-3 (stream 0..3), rollout 1: 4, 0, 1, 2 (the stream's next epoch), each twice;
    # rollout 2: prompts 3, 4 four times each; rollout 3: 0, 1.
    assert epoch0 == [0, 0, 1, 1, 2, 2, 3, 3] * 2 + [4, 4, 0, 0, 1, 1, 2, 2] * 2
    assert epoch1 == [3, 3, 3, 3, 4, 4, 4, 4] * 2 + [0, 0, 0, 0, 1, 1, 1, 1] * 2
    # A sampler that starts at epoch 1 (a resumed run) replays the stream to rollout 2 and reads the same.
    fresh = ScheduledGroupSampler(lambda: Stream(5), lambda r: 2 if r < 2 else 4, rows=8, repeat_count=2,
                                  rollouts_per_epoch=2)
    fresh.set_epoch(1)
    assert list(fresh) == epoch1
