"""Which engine PPO's critic trains under, what it refuses and why, and which states an engine shards.

The 2-rank FSDP2 and DDP runs themselves are in test_distributed.py."""

from __future__ import annotations

import doctest
import json

import pytest

from mlgrpo.errors import UserError
from mlgrpo.trainers import sharding
from mlgrpo.trainers.sharding import (
    DDP, DEEPSPEED, FSDP1, FSDP2, SINGLE, check_engine, ppo_refusal, sharded_states, training_engine, zero_stage,
)  # fmt: skip

from .conftest import grpo_args


def test_doctests():
    assert doctest.testmod(sharding).failed == 0


@pytest.mark.parametrize("engine, critic, processes, says", [
    (DEEPSPEED, "separate", 8, "refuses a second one (the critic)"),
    (FSDP1, "separate", 8, "FSDP2 only"),
    (FSDP2, "lora", 8, "lora runs on the policy's backbone"),
    (FSDP2, "head", 1, "head runs on the policy's backbone"),
    (DDP, "head", 2, "head is single-process only"),
])
def test_refusals_say_why(engine, critic, processes, says):
    assert says in ppo_refusal(engine, critic, processes)


@pytest.mark.parametrize("engine, critic, processes", [
    (FSDP2, "separate", 2), (DDP, "separate", 2), (DDP, "lora", 2), (SINGLE, "head", 1), (SINGLE, "lora", 1),
])
def test_what_ppo_runs_under(engine, critic, processes):
    assert ppo_refusal(engine, critic, processes) is None


def test_engines_and_sharded_states_from_the_training_settings(tmp_path):
    full = ("optimizer", "gradients", "weights")
    assert training_engine({}) == DDP and sharded_states({}) == ()
    assert training_engine({"fsdp": "full_shard"}) == FSDP2 and sharded_states({"fsdp": "full_shard"}) == full
    assert training_engine({"fsdp": "full_shard", "fsdp_config": {"fsdp_version": 1}}) == FSDP1
    assert sharded_states({"fsdp": "shard_grad_op", "fsdp_config": {"version": 1}}) == full[:2]
    assert sharded_states({"fsdp": "full_shard", "fsdp_config": {"reshard_after_forward": False}}) == full[:2]
    config = tmp_path / "ds.json"
    config.write_text(json.dumps({"zero_optimization": {"stage": 3}}), encoding="utf-8")
    assert zero_stage(str(config)) == 3 and training_engine({"deepspeed": str(config)}) == DEEPSPEED
    assert sharded_states({"deepspeed": str(config)}) == full
    assert sharded_states({"deepspeed": {"zero_optimization": {"stage": 2}}}) == full[:2]


def test_fsdp_asked_for_but_left_off_by_accelerate_is_refused(tmp_path):
    # accelerate enables FSDP on GPU process groups only: a CPU run with training.fsdp would train unsharded.
    from accelerate import Accelerator

    plain, fsdp = grpo_args(tmp_path), grpo_args(tmp_path, fsdp="full_shard")  # each resets accelerate's state
    accelerator = Accelerator(cpu=True)
    assert check_engine(accelerator, plain, "head") == SINGLE
    with pytest.raises(UserError, match="training.fsdp is set but accelerate runs this"):
        check_engine(accelerator, fsdp, "separate")
