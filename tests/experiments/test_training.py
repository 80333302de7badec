"""The training section against trl.GRPOConfig and LoRA against peft.LoraConfig."""

from __future__ import annotations

import dataclasses
import importlib.util
from types import SimpleNamespace

import pytest

from mlgrpo.errors import UserError
from mlgrpo.experiments.source import ConfigError
from mlgrpo.experiments.training import (
    PLATFORM_FIELDS, build_grpo_config, check_group_layout, check_lora, check_training, grpo_config, trl_settings,
)  # fmt: skip
from mlgrpo.trainers.config import AlgorithmConfig, KLConfig, UpdateSchedule

BASE = {"num_generations": 8, "per_device_train_batch_size": 64, "max_steps": 5}


def config_error(check, raw) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        check(raw)
    return info.value


def test_valid_settings_in_canonical_form():
    settings = check_training({**BASE, "learning_rate": 2, "epsilon": 0, "lr_scheduler_type": "cosine"})
    assert settings["learning_rate"] == 2.0 and isinstance(settings["epsilon"], float)
    assert settings["lr_scheduler_type"] == "cosine"


def test_typo_names_the_closest_field():
    error = config_error(check_training, {**BASE, "lerning_rate": 1e-4})
    assert error.path == ("training", "lerning_rate")
    assert error.reason == "unknown trl.GRPOConfig field 'lerning_rate' (did you mean 'learning_rate'?)"


@pytest.mark.parametrize("key", sorted(PLATFORM_FIELDS))
def test_platform_fields_are_refused_with_the_reason(key):
    error = config_error(check_training, {**BASE, key: None})
    assert error.reason == f"{key} is set by the platform: {PLATFORM_FIELDS[key]}"


@pytest.mark.parametrize("raw, key, words", [
    ({"learning_rate": "fast"}, "learning_rate", "expected a number"),
    ({"loss_type": "dap"}, "loss_type", "(did you mean 'dapo'?)"),
    ({"lr_scheduler_type": "cosin"}, "lr_scheduler_type", "(did you mean 'cosine'?)"),
    ({"log_level": "loud"}, "log_level", "is not one of"),
    ({"bf16": "yes"}, "bf16", "expected true or false or null"),
])
def test_kinds_and_choices_trl_leaves_unchecked(raw, key, words):
    error = config_error(check_training, {**BASE, **raw})
    assert error.path == ("training", key) and words in error.reason


def test_group_of_one():
    error = config_error(check_training, {**BASE, "num_generations": 1})
    assert error.path == ("training", "num_generations") and "at least 2, got 1" in error.reason


def test_batch_not_divisible_by_the_group():
    # 60 completions, groups of 8: 60 = 7 x 8 + 4, so the nearest whole layouts are 56 and 64.
    error = config_error(check_training, {**BASE, "per_device_train_batch_size": 60})
    assert error.path == ("training", "per_device_train_batch_size")
    assert error.reason.endswith("use per_device_train_batch_size 56 (7 prompts per rollout) or 64 (8 prompts per "
                                 "rollout)")
    # With 4 minibatches per rollout a batch need only be a multiple of 8 / gcd(8, 4) = 2: 62 x 4 = 248 = 31 x 8
    assert check_training({**BASE, "per_device_train_batch_size": 62}, minibatches=4)["per_device_train_batch_size"] == 62
    error = config_error(lambda raw: check_training(raw, minibatches=4), {**BASE, "per_device_train_batch_size": 61})
    assert error.reason.endswith("use per_device_train_batch_size 60 (30 prompts per rollout) or 62 (31 prompts per "
                                 "rollout)")


def test_batch_layout_counts_steps_per_generation_and_defaults():
    check_group_layout({"num_generations": 8, "per_device_train_batch_size": 4, "steps_per_generation": 2})
    check_group_layout({"num_generations": 4, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 2})
    with pytest.raises(ConfigError, match="not a multiple of num_generations 8"):
        check_group_layout({"per_device_train_batch_size": 4})  # TRL's default group is 8
    with pytest.raises(ConfigError, match="generation_batch_size 20 is not a multiple of num_generations 8"):
        check_group_layout({"per_device_train_batch_size": 8, "generation_batch_size": 20})


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_vllm_must_be_installed_to_be_used():
    assert config_error(check_training, {**BASE, "use_vllm": True}).path == ("training", "use_vllm")


def test_grpo_config_applies_the_platform_fields(tmp_path):
    import torch

    run = SimpleNamespace(training={**BASE, "bf16": True, "learning_rate": 2e-4}, seed=7, run_name="grpo-seed7",
                          update=UpdateSchedule(), kl=KLConfig(), algorithm=AlgorithmConfig())
    args = grpo_config(run, str(tmp_path / "out"))
    assert (args.seed, args.run_name, args.learning_rate, args.num_generations) == (7, "grpo-seed7", 2e-4, 8)
    assert args.report_to == []  # "none": metrics leave through mlgrpo's tracking only
    assert args.save_strategy == "no"
    if not torch.cuda.is_available():  # a GPU recipe (bf16: true) validates and runs on CPU, with bf16 acting
        assert args.use_cpu and args.bf16 and not args.fp16
        unset = grpo_config(SimpleNamespace(**{**vars(run), "training": BASE}), str(tmp_path / "out"))
        assert not unset.bf16 and not unset.fp16  # TRL's own default (bf16 on) would be slow CPU autocast
    forced = grpo_config(run, str(tmp_path / "out"), save_strategy="steps", save_steps=3, reward_weights=[1.0, 0.5])
    assert (forced.save_strategy, forced.save_steps, forced.reward_weights) == ("steps", 3, [1.0, 0.5])


def test_fp16_without_cuda_is_refused_naming_it(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("fp16 runs where there is CUDA; this checks a machine without it")
    with pytest.raises(UserError, match=r"^fp16: true needs a CUDA GPU.*set bf16: true instead"):
        build_grpo_config({**BASE, "fp16": True}, str(tmp_path), seed=0, run_name="x")


def test_trl_own_validation_applies(tmp_path):
    settings = check_training({**BASE, "per_device_train_batch_size": 8, "epsilon": -1.0})
    with pytest.raises(UserError, match="trl.GRPOConfig refuses these settings: "):
        build_grpo_config({**settings, "generation_batch_size": 16, "steps_per_generation": 2}, str(tmp_path), seed=0,
                          run_name="x")


@pytest.mark.parametrize("algorithm, coef, placement, beta", [
    ("grpo", 0.05, "auto", 0.05), ("ppo", 0.05, "auto", 0.0), ("ppo", 0.05, "loss", 0.05), ("grpo", 0.0, "auto", 0.0),
])
def test_the_schedule_and_the_kl_become_trls_fields(algorithm, coef, placement, beta):
    settings = trl_settings({**BASE, "gradient_accumulation_steps": 2}, UpdateSchedule(minibatches=3, epochs=2),
                            KLConfig(coef=coef, placement=placement), algorithm)
    assert (settings["steps_per_generation"], settings["num_iterations"], settings["beta"]) == (6, 2, beta)


def test_lora():
    assert check_lora(None) is None
    lora = check_lora({"r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "target_modules": ["q_proj", "v_proj"]})
    assert lora == {"r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "target_modules": ["q_proj", "v_proj"]}
    assert config_error(check_lora, {"r": 0}).path == ("model", "lora", "r")
    assert config_error(check_lora, {"r": 8, "lora_dropout": 1.5}).reason == "must be in [0, 1), got 1.5"
    assert "did you mean 'none'" in config_error(check_lora, {"bias": "nome"}).reason
    assert "did you mean 'lora_alpha'" in config_error(check_lora, {"lora_alfa": 8}).reason
    assert "CAUSAL_LM" in config_error(check_lora, {"task_type": "SEQ_CLS"}).reason


@pytest.mark.parametrize("settings, key, says", [
    ({"deepspeed": {"zero_optimization": {"stage": 3}}}, ("training", "deepspeed"), "PPO does not run under DeepSpeed"),
    ({"fsdp": "full_shard", "fsdp_config": {"version": 1}}, ("training", "fsdp_config"), "FSDP2 only"),
    ({"fsdp": "full_shard"}, ("algorithm", "ppo", "value_model"), "lora runs on the policy's backbone"),
])
def test_a_ppo_arm_is_refused_an_engine_its_critic_cannot_train_under(settings, key, says):
    from mlgrpo.experiments.training import check_ppo_engine
    from mlgrpo.trainers.config import PPOSettings

    ppo = dataclasses.replace(AlgorithmConfig.ppo_default(), ppo=PPOSettings(value_model="lora"))
    error = config_error(lambda raw: check_ppo_engine(raw, ppo, ranks=2), {**BASE, **settings})
    assert error.path == key and says in error.reason
    check_ppo_engine({**BASE, **settings}, AlgorithmConfig(), ranks=2)  # GRPO runs under any of them
    check_ppo_engine(BASE, ppo, ranks=2)  # and the LoRA critic under DDP
    with pytest.raises(ConfigError, match="head is single-process only"):
        check_ppo_engine(BASE, dataclasses.replace(ppo, ppo=PPOSettings(value_model="head")), ranks=2)


def test_an_experiment_file_with_fsdp_loads_and_one_asking_for_a_missing_deepspeed_is_refused(write, load_error):
    from mlgrpo.experiments import load_experiment
    from tests.experiments.conftest import edited

    fsdp = load_experiment(write(edited("  logging_steps: 5\n", "  logging_steps: 5\n  fsdp: full_shard\n")))
    assert fsdp.arms == ("ppo", "grpo", "grpo-lang-balanced")
    if importlib.util.find_spec("deepspeed") is None:
        message, _ = load_error(edited("  logging_steps: 5\n", "  logging_steps: 5\n  deepspeed: {zero_optimization: {stage: 2}}\n"))
        assert "training.deepspeed" in message and "pip install deepspeed" in message
