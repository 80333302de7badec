"""The report's setup from the params a run logs: every effective difference between arms, defaults included,
and each arm's update schedule and KL. The params are the plan's own (what `mlgrpo run` logs), no MLflow."""

from __future__ import annotations

from pathlib import Path

from mlgrpo.experiments import load_experiment
from mlgrpo.reports import analysis
from mlgrpo.reports.collect import comparison_from
from mlgrpo.tracking.reader import ExperimentRecord, RunRecord

QUICKSTART = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.yaml"


def comparison_of(path: Path):
    runs = [RunRecord(run_id=r.run_name, name=r.run_name, status="FINISHED", params=r.flat_params, metrics={},
                      tags={"arm": r.arm, "seed": str(r.seed), "languages": ",".join(r.data.languages),
                            "algorithm": r.algorithm.name}, history={}, start_ms=0, end_ms=1, artifacts={})
            for r in load_experiment(path).plan(seeds=[0])]
    return comparison_from(ExperimentRecord("quickstart", "sqlite:///x.db", None, runs))


def test_the_differences_table_holds_the_defaults_that_differ():
    table = analysis.differences_table(comparison_of(QUICKSTART)).set_index("setting")
    # the critic is PPO's default, never written in the YAML; the std scope is the file's, for every arm
    assert table.loc["critic.learning_rate"].to_dict() == {"ppo": "0.0001", "grpo": "none", "grpo-lang-balanced": "none"}
    assert table.loc["critic.cliprange_value", "ppo"] == "0.2" and "critic" not in table.index
    assert "algorithm.advantage.std_scope" not in table.index  # shared (batch) by every arm of the quickstart
    assert "training.learning_rate" not in table.index  # shared: not a difference
    assert not any(key.startswith("update.") or key.startswith("kl") for key in table.index)  # shared too


def test_a_kl_placed_differently_is_shown(tmp_path):
    text = QUICKSTART.read_text(encoding="utf-8").replace("  coef: 0.0 ", "  coef: 0.05 ")
    (tmp_path / "kl.yaml").write_text(text, encoding="utf-8")
    comp = comparison_of(tmp_path / "kl.yaml")
    table = analysis.differences_table(comp).set_index("setting")
    assert table.loc["kl.placement"].to_dict() == {"ppo": "reward", "grpo": "loss", "grpo-lang-balanced": "loss"}
    assert table.loc["training.beta"].to_dict() == {"ppo": "0.0", "grpo": "0.05", "grpo-lang-balanced": "0.05"}
    lines = {line.split(":")[0]: line for line in analysis.schedule_lines(comp)}
    assert lines["ppo"].endswith("KL 0.05 x k3 in the reward") and lines["grpo"].endswith("KL 0.05 x k3 in the loss")


def test_the_setup_states_each_arms_schedule():
    lines = {line.split(":")[0]: line for line in analysis.schedule_lines(comparison_of(QUICKSTART))}
    assert len(lines) == 3
    assert lines["ppo"] == ("ppo: rollouts of 256 completions (16 prompts), 4 minibatches of 64 completions, 1 epoch(s): "
                        "4 optimiser steps per rollout (policy ratio moves within a rollout); KL off")


def test_every_run_is_listed_with_its_start_and_end():
    def record(arm, seed, start, end):
        return RunRecord(run_id=f"{arm}{seed}", name=f"{arm}-seed{seed}", status="FINISHED", params={}, metrics={},
                         tags={"arm": arm, "seed": str(seed), "languages": "en", "algorithm": arm},
                         history={"eval/reward/total/macro": [(0, start), (100, 0.0), (250, end)]},
                         start_ms=1_000, end_ms=91_000, artifacts={})

    comp = comparison_from(ExperimentRecord("q", "sqlite:///x.db", None, [record("ppo", 0, 0.65, 0.71),
                                                                         record("grpo", 0, 0.65, 0.64)]))
    table = analysis.runs_table(comp, ["reward/total", "chrf"]).set_index("arm")
    assert table.loc["ppo", "reward/total start"] == 0.65 and table.loc["ppo", "reward/total end"] == 0.71
    assert table.loc["grpo", "reward/total end"] < table.loc["grpo", "reward/total start"]  # shown, not hidden
    assert table.loc["grpo", "wall time (s)"] == 90.0 and table["chrf start"].isna().all()  # not logged: NaN
