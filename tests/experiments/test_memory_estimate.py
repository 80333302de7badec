"""`mlgrpo validate` estimates each arm's peak memory and warns when an arm will not fit the device it sees."""

from __future__ import annotations

import pytest

from mlgrpo import cli
from mlgrpo.experiments import load_experiment
from mlgrpo.experiments.memory import plan_memory
from mlgrpo.trainers.memory import load_fit

from .conftest import EXPERIMENTS


@pytest.fixture(scope="module")
def gemma():
    return load_experiment(EXPERIMENTS / "gemma-270m-lora.yaml")


def test_the_shipped_fit_states_its_error():
    fit = load_fit()
    assert fit is not None and fit.points >= 5 * 6 - 6  # bench_scale: 5 sizes x 6 arms, gemma's full arms may fail
    assert 0 <= fit.median_error <= fit.max_error and fit.cross_validated
    assert "bench.bench_scale" in fit.command


@pytest.mark.slow
def test_each_arm_gets_an_estimate_that_follows_what_it_holds(gemma):
    plan = plan_memory(gemma)
    arms = {a.arm: a for a in plan.arms}
    assert set(arms) == {"ppo", "grpo", "grpo-lang-std"}
    weights = arms["grpo"].terms["weights"]
    assert weights == pytest.approx(268_098_176 * 4 + 3_796_992 * 4)  # fp32 base + the r=16 all-linear adapter
    assert arms["grpo"].peak == arms["grpo-lang-std"].peak  # the same model, batch and no critic
    # PPO's LoRA critic: its own adapter and head with AdamW, not a second 1 GB model
    assert arms["ppo"].terms["critic"] == pytest.approx(3_796_992 * 16 + (640 + 1) * 16)
    assert arms["ppo"].terms["activations"] == pytest.approx(2 * arms["grpo"].terms["activations"])


@pytest.mark.slow
def test_validate_prints_the_estimates_and_warns_when_an_arm_does_not_fit(monkeypatch, capsys):
    if "validate" not in cli.COMMAND_MODULES:
        monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "validate"))
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)  # the CPU branch, on any machine
    assert cli.main(["validate", str(EXPERIMENTS / "gemma-270m-lora.yaml")]) == 0
    out = capsys.readouterr().out
    assert "estimated peak memory per run on cpu" in out
    header = next(line for line in out.splitlines() if line.strip().startswith("arm ") and "peak" in line)
    assert header.split()[:3] == ["arm", "peak", "weights"]
    assert "memory model fitted to" in out and "median error" in out
    monkeypatch.setattr("mlgrpo.experiments.memory._available_ram", lambda: 2**30)  # a machine with 1 GiB free
    assert cli.main(["validate", str(EXPERIMENTS / "gemma-270m-lora.yaml")]) == 0
    out = capsys.readouterr().out
    assert "arm 'ppo' needs about" in out and "more than the 1.0 GiB of cpu" in out
    assert out.rstrip().endswith("OK")  # a warning, not an error: the file is valid


def test_sharding_over_the_ranks_of_a_run_divides_the_states_it_shards(write):
    from .conftest import QUICKSTART, edited

    plain = plan_memory(load_experiment(write(QUICKSTART, "plain.yaml")))
    text = edited("  logging_steps: 5\n", "  logging_steps: 5\n  fsdp: full_shard\n")
    text = edited("  workers: auto", "  gpus_per_run: 2\n  workers: auto", text)
    sharded = plan_memory(load_experiment(write(text, "fsdp.yaml")))
    for before, after in zip(plain.arms, sharded.arms, strict=True):
        for key in ("weights", "gradients", "optimizer", "critic"):  # FSDP full_shard: each rank holds half
            assert after.terms[key] == pytest.approx(before.terms[key] / 2)
        for key in ("activations", "kv_cache", "transients"):  # what a rank computes on is its own
            assert after.terms[key] == before.terms[key]
        assert after.peak < before.peak
    assert "per rank of 2 (run.gpus_per_run): ppo's optimizer, gradients, weights sharded" in sharded.note
