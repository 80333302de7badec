"""Placement over device lists a CPU machine does not have: groups, waves, refusals, the printed plan."""

from __future__ import annotations

import pytest

from mlgrpo.errors import UserError
from mlgrpo.experiments.placement import check_memory, cuda_env, place, visible_gpus

TWELVE = [f"{arm}-seed{seed}" for seed in range(6) for arm in ("grpo", "lgrpo")]


def by_wave(placement):
    waves: dict[int, list] = {}
    for slot in placement.slots:
        waves.setdefault(slot.wave, []).append((slot.run, slot.devices))
    return waves


def test_eight_gpus_one_each_twelve_runs_make_two_waves_and_no_gpu_holds_two_runs_at_once():
    gpus = tuple(str(i) for i in range(8))
    p = place(TWELVE, gpus, 1)
    assert (p.workers, p.waves, p.wall) == (8, 2, 2.0)
    waves = by_wave(p)
    assert [devices for _, devices in waves[1]] == [(g,) for g in gpus]  # every GPU busy in wave 1
    assert len(waves[2]) == 4
    for runs in waves.values():  # within a wave, no device twice
        used = [d for _, devices in runs for d in devices]
        assert len(used) == len(set(used))
    assert sorted(s.run for s in p.slots) == sorted(TWELVE)  # every run placed once


def test_two_gpus_per_run_take_consecutive_pairs_and_an_odd_gpu_is_left_idle():
    p = place(TWELVE[:4], ("0", "1", "2", "3", "4"), 2)
    assert {s.devices for s in p.slots} == {("0", "1"), ("2", "3")}
    assert p.workers == 2 and p.waves == 2 and p.idle == ("4",)
    text = "\n".join(p.lines())
    assert "GPU 0,1 (2 ranks)" in text and "idle GPU(s): 4" in text


def test_device_ids_are_the_visible_ones_not_renumbered():
    p = place(["a", "b"], visible_gpus({"CUDA_VISIBLE_DEVICES": "3,5"}), None)
    assert [s.devices for s in p.slots] == [("3",), ("5",)]
    assert cuda_env(p.slots[1].devices) == {"CUDA_VISIBLE_DEVICES": "5"}


def test_no_gpu_means_cpu_workers_as_before():
    p = place(["a", "b", "c"], (), None, cpu_workers=2)
    assert (p.gpus_per_run, p.workers, p.waves) == (0, 2, 2)
    assert all(s.devices == () for s in p.slots)
    assert place(["a", "b", "c"], (), None, workers=1, cpu_workers=2).workers == 1
    assert "CPU only" in p.lines()[0]


def test_gpus_per_run_zero_keeps_a_gpu_machine_on_cpu_workers():
    p = place(["a", "b"], ("0", "1"), 0, cpu_workers=2)
    assert all(s.devices == () for s in p.slots)


def test_workers_cap_the_device_groups():
    p = place(TWELVE, ("0", "1", "2", "3"), 1, workers=2)
    assert p.workers == 2 and p.waves == 6 and {s.devices for s in p.slots} == {("0",), ("1",)}


def test_fewer_runs_than_gpus_start_one_worker_per_run():
    p = place(["only"], ("0", "1", "2"), 1)
    assert p.workers == 1 and p.idle == ("1", "2")


def test_longer_runs_shift_the_waves_and_the_wall_time():
    runs = ["ppo-seed0", "ppo-seed1", "grpo-seed0", "grpo-seed1"]
    p = place(runs, ("0", "1"), 1, costs={"ppo-seed0": 2.0, "ppo-seed1": 2.0})
    assert p.wall == 3.0  # each GPU: one PPO run (2) then one GRPO run (1)


@pytest.mark.parametrize("gpus,per_run", [((), 1), (("0",), 2), (("0", "1", "2"), 4)])
def test_a_run_that_needs_more_gpus_than_visible_is_refused(gpus, per_run):
    with pytest.raises(UserError, match=rf"run.gpus_per_run is {per_run} but this machine shows") as info:
        place(["a"], gpus, per_run)
    assert "\n" not in str(info.value)


def test_a_run_bigger_than_one_gpu_is_refused_before_anything_starts():
    check_memory({"grpo": 10 * 2**30}, 80 * 2**30)
    with pytest.raises(UserError, match=r"arm 'ppo' needs about 90.0 GiB .* more than the 80.0 GiB"):
        check_memory({"grpo": 10 * 2**30, "ppo": 90 * 2**30}, 80 * 2**30, "cuda:0")


def test_cuda_visible_devices_stops_at_an_invalid_entry_as_cuda_does():
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "0,-1,1"}) == ("0",)
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}) == ()
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "GPU-8f3a,GPU-1b2c"}) == ("GPU-8f3a", "GPU-1b2c")
