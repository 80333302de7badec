"""The plan: runs, the differences table, config hashes, resolved YAML."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from mlgrpo.errors import UserError
from mlgrpo.experiments import load_experiment
from mlgrpo.experiments.diff import ABSENT
from mlgrpo.sampling.group_schedule import GroupSwitch

from .conftest import EXPERIMENTS, QUICKSTART, edited, shipped_experiments


@pytest.fixture(scope="module")
def quickstart():
    return load_experiment(EXPERIMENTS / "quickstart.yaml")


def test_runs_are_arms_times_seeds(quickstart):
    runs = quickstart.plan()
    assert [r.run_name for r in runs] == ["ppo-seed0", "grpo-seed0", "grpo-lang-balanced-seed0",
                                          "ppo-seed1", "grpo-seed1", "grpo-lang-balanced-seed1"]
    assert [r.algorithm.name for r in runs[:3]] == ["ppo", "grpo", "grpo"]
    assert [r.sampler.seed for r in runs] == [0, 0, 0, 1, 1, 1]  # the run's seed, not the file's
    assert [r.run_name for r in quickstart.plan(only=["grpo"], seeds=[1])] == ["grpo-seed1"]


def test_plan_filters_name_what_exists(quickstart):
    with pytest.raises(UserError, match=r"arm 'gpro' is not in the experiment \(did you mean 'grpo'\?\)"):
        quickstart.plan(only=["gpro"])
    with pytest.raises(UserError, match="seed 5 is not in the experiment; its seeds: 0, 1"):
        quickstart.plan(seeds=[5])


CRITIC = {"model": "separate", "cliprange_value": 0.2, "warmup_steps": 0, "learning_rate": 1e-4, "max_grad_norm": 1.0}


def test_differences_table_is_exact_and_holds_the_defaults_that_differ(quickstart):
    # PPO's critic is a default the YAML never writes; the std scope is shared (batch), so it is no difference
    assert quickstart.differences() == [
        ("algorithm.name", {"ppo": "ppo", "grpo": "grpo", "grpo-lang-balanced": "grpo"}),
        ("algorithm.advantage.estimator", {"ppo": "gae", "grpo": "grpo", "grpo-lang-balanced": "grpo"}),
        ("critic", {"ppo": CRITIC, "grpo": "none", "grpo-lang-balanced": "none"}),
        ("sampler.name", {"ppo": "uniform", "grpo": "uniform", "grpo-lang-balanced": "balanced"}),
    ]
    assert quickstart.declared_differences() == [
        ("algorithm.name", {"ppo": "ppo", "grpo": "grpo", "grpo-lang-balanced": "grpo"}),
        ("algorithm.advantage.estimator", {"ppo": "gae", "grpo": "grpo", "grpo-lang-balanced": "grpo"}),
        ("sampler.name", {"ppo": "uniform", "grpo": "uniform", "grpo-lang-balanced": "balanced"}),
    ]


def test_the_std_scope_in_force_is_a_difference_where_only_one_arm_writes_it():
    # imbalance.yaml: PPO declares the batch scope, the GRPO arms keep GRPO's default (group)
    found = dict(load_experiment(EXPERIMENTS / "imbalance.yaml").differences())
    assert found["algorithm.advantage.std_scope"] == {"ppo": "batch", "grpo": "group", "grpo-balanced": "group",
                                                      "grpo-oversample": "group", "grpo-lang-std": "language"}


def test_a_kl_that_acts_in_different_places_is_a_difference(write):
    # One coefficient for every arm: PPO puts it in the reward, GRPO in TRL's loss (beta), and the table says so.
    experiment = load_experiment(write(edited("  coef: 0.0 ", "  coef: 0.05 ")))
    rows = dict(experiment.differences())
    assert rows["kl.placement"] == {"ppo": "reward", "grpo": "loss", "grpo-lang-balanced": "loss"}
    assert "kl.coef" not in rows and "kl.estimator" not in rows
    assert rows["training.beta"] == {"ppo": 0.0, "grpo": 0.05, "grpo-lang-balanced": 0.05}
    # an arm that turns it off is one more difference, its own
    off = load_experiment(write(edited("  grpo: {}", "  grpo: {kl: {coef: 0.0}}", edited("  coef: 0.0 ", "  coef: 0.05 "))))
    assert dict(off.differences())["kl"] == {"ppo": {"coef": 0.05, "estimator": "k3", "placement": "reward"},
                                             "grpo": "off",
                                             "grpo-lang-balanced": {"coef": 0.05, "estimator": "k3", "placement": "loss"}}


def test_dynamic_sampling_is_a_difference_and_leaves_other_arms_hashes_alone(write, quickstart):
    experiment = load_experiment(write(edited("  grpo: {}", "  grpo: {algorithm: {dynamic_sampling: {enabled: true}}}")))
    assert dict(experiment.differences())["algorithm.dynamic_sampling"] == {
        "ppo": "off", "grpo": {"max_rounds": 3, "tolerance": 1e-6}, "grpo-lang-balanced": "off"}
    runs, before = {r.arm: r for r in experiment.plan(seeds=[0])}, {r.arm: r for r in quickstart.plan(seeds=[0])}
    assert runs["grpo"].resolved["algorithm"]["dynamic_sampling"] == {"enabled": True, "max_rounds": 3, "tolerance": 1e-6}
    # An arm without it resolves as before the key existed: its finished runs are still found by hash.
    assert "dynamic_sampling" not in runs["grpo-lang-balanced"].resolved["algorithm"]
    assert runs["grpo-lang-balanced"].config_hash == before["grpo-lang-balanced"].config_hash
    assert runs["grpo"].config_hash != before["grpo"].config_hash


def test_a_group_schedule_is_a_difference_and_leaves_other_arms_hashes_alone(write, quickstart):
    # Rollouts of 4 optimiser steps: the switch at step 50 takes effect at step 52, with 8 prompts of 32.
    experiment = load_experiment(write(edited("  grpo: {}", "  grpo: {update: {group_schedule: [{step: 50, size: 32}]}}")))
    differences = dict(experiment.differences())
    assert differences["update.group_schedule"] == {"ppo": 16, "grpo": "16, 32 from step 52", "grpo-lang-balanced": 16}
    assert differences["update.rollout_prompts"] == {"ppo": 16, "grpo": "16, 8 from step 52", "grpo-lang-balanced": 16}
    runs, before = {r.arm: r for r in experiment.plan(seeds=[0])}, {r.arm: r for r in quickstart.plan(seeds=[0])}
    assert runs["grpo"].update.group_schedule == (GroupSwitch(50, 32),)
    assert "group_schedule" not in runs["ppo"].resolved["update"]
    assert runs["ppo"].config_hash == before["ppo"].config_hash


# The effective view names PPO's critic settings after what they are (effective.py).
CRITIC_NAMES = {"algorithm.ppo.value_learning_rate": "critic.learning_rate", "algorithm.ppo.value_model": "critic.model"}


@pytest.mark.parametrize("path", shipped_experiments())
def test_every_declared_difference_is_an_effective_one(path):
    experiment = load_experiment(path)
    effective = {key for key, _ in experiment.differences()}
    for key, _ in experiment.declared_differences():
        key = CRITIC_NAMES.get(key, key.replace("algorithm.ppo.", "critic."))
        assert any(key == e or key.startswith(e + ".") or e.startswith(key + ".") for e in effective), (path, key)


def test_the_schedule_is_shared_and_mapped_onto_trl(quickstart):
    for run in quickstart.plan(seeds=[0]):
        update = run.effective["update"]
        assert (update["minibatches"], update["epochs"], update["steps_per_rollout"]) == (4, 1, 4)
        assert (update["minibatch_completions"], update["rollout_completions"], update["rollout_prompts"]) == (64, 256, 16)
        assert run.effective["training"]["steps_per_generation"] == 4 and run.effective["training"]["num_iterations"] == 1
        assert run.flat_params["effective.update.policy_ratio"] == "moves within a rollout"
    assert quickstart.warnings == ()


def test_one_step_per_rollout_is_warned_about(write):
    experiment = load_experiment(write(edited("  minibatches: 4 ", "  minibatches: 1 ")))
    assert len(experiment.warnings) == 3 and "arm 'ppo': one optimiser step per rollout" in experiment.warnings[0]
    assert "the policy ratio is always 1" in experiment.warnings[0] and "actor-critic with GAE" in experiment.warnings[0]
    assert "a policy gradient with a group baseline" in experiment.warnings[1]
    two_epochs = load_experiment(write(edited("  grpo: {}", "  grpo: {update: {epochs: 2}}",
                                              edited("  minibatches: 4 ", "  minibatches: 1 "))))
    assert [w.split(":")[0] for w in two_epochs.warnings] == ["arm 'ppo'", "arm 'grpo-lang-balanced'"]


def test_config_hash_is_sha256_of_the_resolved_arm_and_ignores_the_seed(quickstart):
    runs = {(r.arm, r.seed): r for r in quickstart.plan()}
    grpo = runs["grpo", 0]
    blob = json.dumps(grpo.resolved, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert grpo.config_hash == hashlib.sha256(blob).hexdigest()[:12]
    assert runs["grpo", 1].config_hash == grpo.config_hash
    assert "seed" not in json.dumps(grpo.resolved)
    assert len({runs[arm, 0].config_hash for arm in quickstart.arms}) == 3


def test_config_hash_is_stable_across_key_order_and_moves_with_a_setting(write):
    original = load_experiment(write(QUICKSTART, "a.yaml")).plan()[1]
    # The same file with its sections in another order: the same configuration.
    head, _, rest = QUICKSTART.partition("model:")
    model_block, _, tail = rest.partition("data:")
    reordered = load_experiment(write(head + "data:" + tail + "\nmodel:" + model_block, "b.yaml")).plan()[1]
    assert reordered.config_hash == original.config_hash
    changed = load_experiment(write(edited("learning_rate: 2.0e-4", "learning_rate: 3.0e-4"), "c.yaml")).plan()[1]
    assert changed.config_hash != original.config_hash
    assert changed.flat_params["training.learning_rate"] == "0.0003"


def test_flat_params_are_strings_for_mlflow(quickstart):
    params = quickstart.plan()[0].flat_params
    assert params["algorithm.advantage.estimator"] == "gae"
    assert params["data.languages"] == "[en, es, ru, ar, ja, sw]"
    assert params["rewards.rewards.1.weight"] == "0.5"
    assert all(isinstance(v, str) for v in params.values())


def test_resolved_yaml_reads_back(quickstart):
    resolved = yaml.safe_load(quickstart.resolved_yaml())
    assert list(resolved["arms"]) == ["ppo", "grpo", "grpo-lang-balanced"]
    assert resolved["arms"]["grpo"]["config_hash"] == quickstart.plan()[1].config_hash
    assert resolved["arms"]["ppo"]["training"]["learning_rate"] == 2e-4
    assert resolved["tracking"]["experiment"] == "quickstart"
    assert resolved["run"]["output_dir"] == "runs/quickstart"


def test_absent_is_not_null_in_differences(write):
    text = edited("  grpo: {}", "  grpo:\n    model:\n      lora: {r: 4}")
    rows = dict(load_experiment(write(text)).differences())
    assert rows["model.lora"] == {"ppo": None, "grpo": {"r": 4}, "grpo-lang-balanced": None}
    assert ABSENT not in rows["model.lora"].values()
