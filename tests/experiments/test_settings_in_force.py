"""No silent setting (issue 26): model.dtype and bf16 act in a real run, and validate shows the defaults that
decide whether a run can learn, with a warning when the learning rate decays to ~0 within a short run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TRIMMED = Path(__file__).with_name("trimmed.yaml")


def trimmed(tmp_path: Path, **changes) -> Path:
    """trimmed.yaml with sections replaced or merged (a dict merges one level deep), written to tmp_path."""
    config = yaml.safe_load(TRIMMED.read_text(encoding="utf-8"))
    for key, value in changes.items():
        config[key] = {**config[key], **value} if isinstance(value, dict) and key != "arms" else value
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.slow
def test_two_steps_with_bfloat16_weights_save_bfloat16_weights(tmp_path):
    from safetensors import safe_open

    from mlgrpo.experiments.worker import execute_run

    path = trimmed(tmp_path, model={"dtype": "bfloat16"}, training={"max_steps": 2, "bf16": True},
                   arms={"grpo": {}}, evaluation={"every_steps": 0})
    run_dir = tmp_path / "run"
    outcome = execute_run(str(path), 0, tracking_uri="", child_run_id=None, run_dir=str(run_dir))
    assert outcome.status == "FINISHED"
    with safe_open(run_dir / "final" / "model.safetensors", framework="pt") as saved:
        dtypes = {saved.get_slice(name).get_dtype() for name in saved.keys()}
    assert dtypes == {"BF16"}


def validate(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mlgrpo.cli", "validate", str(path), *extra], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_validate_shows_the_settings_in_force_and_warns_of_a_schedule_that_decays_to_zero(tmp_path):
    decaying = validate(trimmed(tmp_path, training={"max_steps": 12}))
    assert decaying.returncode == 0, decaying.stderr[-2000:]
    table = decaying.stdout.split("settings in force")[1].split("\n\n")[0]
    for line in ("lr_scheduler_type      linear", "temperature            1.0", "model.dtype            auto",
                 "std_scope              differs: ppo=batch, grpo=group", "model.lora             none"):
        assert line in table, (line, table)
    assert "arm 'grpo': lr_scheduler_type linear brings the learning rate below 10% of its peak by step 12 of 12 " \
           "(mean 54% of the peak over the run)" in decaying.stdout
    constant = validate(trimmed(tmp_path, training={"max_steps": 12, "lr_scheduler_type": "constant_with_warmup",
                                                    "warmup_steps": 2}), "--json")
    plan = json.loads(constant.stdout)
    assert plan["settings"]["lr_scheduler_type"] == "constant_with_warmup"
    assert not any("learning rate" in w for w in plan["warnings"])


def test_learning_rate_warning_follows_transformers_schedules():
    from mlgrpo.experiments.inforce import learning_rate_warning, lr_multipliers

    assert lr_multipliers({"max_steps": 4, "lr_scheduler_type": "linear"}) == [1.0, 0.75, 0.5, 0.25]
    assert learning_rate_warning("a", {"max_steps": 1000, "lr_scheduler_type": "linear"}) is None  # decays late
    assert learning_rate_warning("a", {"max_steps": 40, "lr_scheduler_type": "cosine"}) is not None
    assert learning_rate_warning("a", {"max_steps": 200, "lr_scheduler_type": "linear"}) is None  # 100 steps' worth
    assert learning_rate_warning("a", {"max_steps": -1}) is None  # epochs decide: no step count to check


@pytest.mark.slow
def test_a_random_reward_control_arm_is_one_setting_shown_as_a_difference_and_trains(tmp_path):
    from safetensors.torch import load_file

    from mlgrpo.experiments import load_experiment
    from mlgrpo.experiments.worker import execute_run
    from mlgrpo.models.loading import resolve

    path = trimmed(tmp_path, training={"max_steps": 2}, evaluation={"every_steps": 0},
                   arms={"grpo": {}, "grpo-shuffled": {"rewards": {"control": "shuffle"}}})
    experiment = load_experiment(path)
    assert dict(experiment.differences())["rewards.control"] == {"grpo": "none", "grpo-shuffled": "shuffle"}
    index = next(i for i, run in enumerate(experiment.plan()) if run.arm == "grpo-shuffled")
    run_dir = tmp_path / "run"
    outcome = execute_run(str(path), index, tracking_uri="", child_run_id=None, run_dir=str(run_dir))
    assert outcome.status == "FINISHED"
    start = load_file(f"{resolve(experiment.model.policy)}/model.safetensors")
    trained = load_file(run_dir / "final" / "model.safetensors")
    assert any(not trained[name].equal(start[name]) for name in start)  # it trained on the shuffled rewards
