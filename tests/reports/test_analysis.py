"""Report tables and conclusions from hand-made runs (no MLflow): the numbers are worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mlgrpo.reports import analysis
from mlgrpo.reports.aggregate import aggregate_differences, aggregate_intervals, reduce
from mlgrpo.reports.collect import comparison_from
from mlgrpo.reports.conclusions import verdict_lines
from mlgrpo.tracking.reader import ExperimentRecord, RunRecord

IDS = ["a", "b", "c", "d"]


def run(arm: str, seed: int, en: list[float], ja: list[float], *, algorithm: str | None = None, items: bool = True,
        status: str = "FINISHED", reward: list[float] | None = None, runtime: float = 10.0) -> RunRecord:
    artifacts = {}
    if items:
        artifacts["eval_items/step_000004.json"] = {
            "id": IDS + IDS, "language": ["en"] * 4 + ["ja"] * 4, "exact_match": en + ja}
    reward = reward or [0.0, 0.5, 0.9, 1.0, 1.0, 1.0]
    return RunRecord(
        run_id=f"{arm}{seed}", name=f"{arm}-seed{seed}", status=status,
        tags={"arm": arm, "seed": str(seed), "languages": "en,ja", "algorithm": algorithm or arm},
        params={"algorithm.name": algorithm or arm, "training.per_device_train_batch_size": "8",
                "training.learning_rate": "0.001"},
        metrics={"eval/exact_match/en": float(np.mean(en)), "eval/exact_match/ja": float(np.mean(ja)),
                 "system/samples_per_sec": 100.0 if arm == "ppo" else 200.0, "train/summary/runtime": runtime},
        history={"train/reward/macro": list(enumerate(reward)), "train/loss": [(0, 1.0), (1, 2.0), (2, 4.0), (3, 7.0)]},
        start_ms=0, end_ms=1000, artifacts=artifacts)


def comparison(runs, parent=None):
    return comparison_from(ExperimentRecord("exp", "sqlite:///x.db", parent, runs))


def test_aggregate_rows_by_hand():
    # per-language statistics [0.2, 0.6, 0.4]: macro 0.4, worst 0.2 (0.6 when lower is better), gap 0.6-0.2
    values = np.array([0.2, 0.6, 0.4])
    assert reduce(values, "macro", False) == pytest.approx(0.4)
    assert reduce(values, "worst", False) == pytest.approx(0.2)
    assert reduce(values, "worst", True) == pytest.approx(0.6)
    assert reduce(values, "gap", False) == pytest.approx(0.4)
    # constant scores per language: every replicate is the same, so the intervals have zero width
    arrays = [np.full((2, 3), 0.2), np.full((2, 5), 0.6)]
    rows = aggregate_intervals(arrays)
    assert (rows["macro"].mean, rows["macro"].low, rows["macro"].high) == pytest.approx((0.4, 0.4, 0.4))
    assert rows["gap"].mean == pytest.approx(0.4) and rows["worst"].mean == pytest.approx(0.2)
    diffs = aggregate_differences([a + 0.1 for a in arrays], arrays)
    assert diffs["macro"].mean == pytest.approx(0.1) and diffs["macro"].low == pytest.approx(0.1)
    assert diffs["gap"].mean == pytest.approx(0.0)  # both languages moved by the same amount
    assert diffs["macro"].p_value == 0.0  # every replicate is above 0
    with pytest.raises(ValueError, match="same shapes"):
        aggregate_differences(arrays, [np.zeros((2, 2)), np.zeros((2, 5))])


def test_difference_on_one_language_is_stated_and_none_on_the_other():
    # grpo gets every en prompt right where ppo gets none (difference +1 on every pair, 2 seeds x 4
    # prompts = 8 pairs: exact sign-flip p = 2/256 = 0.0078, Holm over 2 languages: 0.0156 < 0.05);
    # ja is identical in both arms (p = 1).
    runs = [run("ppo", s, [0, 0, 0, 0], [1, 0, 1, 0]) for s in (0, 1)]
    runs += [run("grpo", s, [1, 1, 1, 1], [1, 0, 1, 0]) for s in (0, 1)]
    comp = comparison(runs)
    assert analysis.baseline_arm(comp) == "ppo" and analysis.pairs(comp) == [("grpo", "ppo")]
    paired = analysis.paired_table(comp, ["exact_match"])
    en = paired[(paired.language == "en")].iloc[0]
    assert (en.difference, en.low, en.high) == pytest.approx((1.0, 1.0, 1.0))
    assert en.p == pytest.approx(2 / 256) and en.p_adjusted == pytest.approx(4 / 256)
    assert en.verdict == "better" and en.conditional  # 2 seeds: these trained models, not yet the algorithm
    # ja: the same answers in both arms, difference 0 [0, 0]: within +-0.02 of exact match, "negligible"
    ja = paired[paired.language == "ja"].iloc[0]
    assert ja.verdict == "negligible" and "within +-0.02" in ja.reason
    text = " ".join(verdict_lines(paired, ["exact_match"], seeds=2, min_seeds=6))
    assert "grpo is better on exact_match on en: +1.000 [+1.000, +1.000]" in text
    assert "exact_match on ja +0.000 [+0.000, +0.000]" in text and "With 2 seeds per arm" in text
    assert "grpo: 2 better, 1 negligible, 2 no difference of 5." in text  # en, ja, macro, worst, gap
    final = analysis.final_table(comp, ["exact_match"])
    row = final[(final.arm == "grpo") & (final.language == "macro")].iloc[0]
    assert row["mean"] == pytest.approx(0.75) and row.ci == "prompts x seeds" and row.prompts == 8


def test_one_seed_says_seed_variation_is_not_covered():
    comp = comparison([run("ppo", 0, [0, 0, 1, 0], [0, 0, 0, 0]), run("grpo", 0, [1, 1, 1, 1], [0, 0, 0, 0])])
    final = analysis.final_table(comp, ["exact_match"])
    assert set(final.ci) == {"prompts only (1 seed)"}
    text = verdict_lines(analysis.paired_table(comp, ["exact_match"]), ["exact_match"], seeds=1, min_seeds=6)
    assert any("With 1 seed per arm, every verdict holds for the trained models" in line for line in text)


def test_one_seed_without_per_prompt_scores_has_no_interval_and_no_claim():
    comp = comparison([run("ppo", 0, [0, 0, 0, 0], [0] * 4, items=False),
                       run("grpo", 0, [1, 1, 1, 1], [0] * 4, items=False)])
    final = analysis.final_table(comp, ["exact_match"])
    assert final.low.isna().all() and set(final.ci) == {"unavailable (1 seed(s), one value each: fewer than 6)"}
    paired = analysis.paired_table(comp, ["exact_match"])
    assert set(paired.verdict) == {"untestable"}  # one pair per language: nothing can be claimed
    assert set(paired.reason) == {"one value per seed (no per-prompt scores) and 1 seed: a test over seeds needs 6 "
                                  "(its smallest p here is 2/2^1 = 1)"}
    assert any("logged no per-prompt scores" in w for w in comp.warnings)


def test_one_arm_and_runs_in_progress():
    comp = comparison([run("grpo", 0, [1, 0, 1, 0], [0] * 4, status="RUNNING")])
    assert analysis.paired_table(comp, ["exact_match"]).empty
    assert verdict_lines(analysis.paired_table(comp, ["exact_match"]), ["exact_match"], 1, 6)[0].startswith("Only one arm")
    assert any("still running" in w for w in comp.warnings)
    assert len(analysis.cost_table(comp)) == 1  # no ratio row without a second arm


def test_stability_convergence_cost_and_differences_by_hand():
    comp = comparison([run("ppo", 0, [0] * 4, [0] * 4, runtime=20.0), run("grpo", 0, [0] * 4, [0] * 4, runtime=10.0)])
    stability = analysis.stability_table(comp).set_index("arm")
    # loss 1, 2, 4, 7: changes 1, 2, 3, std (ddof 1) = 1.0
    assert stability.loc["ppo", "loss volatility"] == pytest.approx(1.0)
    convergence = analysis.convergence_table(comp).set_index("arm")
    # reward 0, .5, .9, 1, 1, 1: final (last 3) 1.0, target 0 + 0.9 * (1 - 0) = 0.9, first reached at step 2
    assert convergence.loc["grpo", "steps to 90%"] == 2.0 and convergence.loc["grpo", "samples to 90%"] == 16.0
    cost = analysis.cost_table(comp).set_index("arm")
    assert cost.loc["grpo / ppo", "samples/s"] == pytest.approx(2.0)
    assert cost.loc["grpo / ppo", "wall time (s)"] == pytest.approx(0.5)
    differences = analysis.differences_table(comp)
    assert list(differences.setting) == ["algorithm.name"]  # the learning rate is shared: not listed


def test_arms_follow_the_experiment_order_and_missing_seeds_are_warned():
    parent = RunRecord("p", "parent", "FINISHED", {}, {"arms": "ppo,grpo"}, {}, {}, 0, 1)
    comp = comparison([run("grpo", 0, [0] * 4, [0] * 4), run("ppo", 0, [0] * 4, [0] * 4),
                       run("ppo", 1, [0] * 4, [0] * 4)], parent)
    assert comp.arms == ["ppo", "grpo"] and comp.seeds == ["0", "1"]
    assert any("grpo has no run for seed(s) 1" in w for w in comp.warnings)
    scores = comp.scores("grpo", "exact_match", "en")
    assert scores.shape == (2, 4) and math.isnan(scores[1, 0])


def test_seed_level_aggregates_are_tested_over_seeds_not_claimed_from_two():
    # no per-prompt scores, 2 seeds: grpo is 0.1 above ppo in both seeds and both languages. Over seeds the
    # smallest sign-flip p with 2 pairs is 2 / 4 = 0.5: nothing can be claimed, whatever its size, and the
    # report says so (untestable, with the reason) instead of "no difference"; no interval is shown.
    runs = [run("ppo", s, [0.5] * 4, [0.4] * 4, items=False) for s in (0, 1)]
    runs += [run("grpo", s, [0.6] * 4, [0.5] * 4, items=False) for s in (0, 1)]
    paired = analysis.paired_table(comparison(runs), ["exact_match"])
    macro = paired[paired.language == "macro"].iloc[0]
    assert macro.difference == pytest.approx(0.1) and macro.p == pytest.approx(0.5)
    assert set(paired.verdict) == {"untestable"} and paired.low.isna().all() and paired.high.isna().all()
    assert "2 seeds: a test over seeds needs 6 (its smallest p here is 2/2^2 = 0.5)" in macro.reason
    # with 6 seeds the same differences are testable over seeds: all 6 pairs +0.1, p = 2/64 < 0.05
    runs = [run("ppo", s, [0.5] * 4, [0.4] * 4, items=False) for s in range(6)]
    runs += [run("grpo", s, [0.6] * 4, [0.5] * 4, items=False) for s in range(6)]
    paired = analysis.paired_table(comparison(runs), ["exact_match"])
    macro = paired[paired.language == "macro"].iloc[0]
    assert macro.p == pytest.approx(2 / 64) and macro.verdict == "better" and not macro.conditional


def test_a_language_without_the_metric_does_not_block_the_aggregates():
    # en differs by +1 on 8 pairs; ja has no value in either arm: the macro is en's, and testable
    a = [np.ones((2, 4)), np.full((2, 1), np.nan)]
    b = [np.zeros((2, 4)), np.full((2, 1), np.nan)]
    rows = aggregate_differences(a, b)
    assert rows["macro"].mean == pytest.approx(1.0) and rows["macro"].n_pairs == 8
    assert all(math.isnan(d.mean) for d in aggregate_differences([a[1]], [b[1]]).values())


def test_diagnostics_are_the_mean_and_max_over_logged_steps_by_hand():
    ppo = [run("ppo", s, [0] * 4, [0] * 4) for s in (0, 1)]
    ppo[0].history["train/clip_ratio/region_mean"] = [(0, 0.0), (1, 0.02), (2, 0.04)]   # mean 0.02
    ppo[1].history["train/clip_ratio/region_mean"] = [(0, 0.06), (1, float("nan"))]    # NaN left out: mean 0.06
    ppo[0].history["train/ppo/value_clipfrac"] = [(0, 0.5), (1, 0.1)]                   # one seed logged it
    grpo = run("grpo", 0, [0] * 4, [0] * 4)
    grpo.history["train/clip_ratio/region_mean"] = [(0, 0.0), (1, 0.0)]
    table = analysis.diagnostics_table(comparison(ppo + [grpo]))
    clip = table[table.metric == "train/clip_ratio/region_mean"].set_index("arm")
    assert clip.loc["ppo", "mean over steps"] == pytest.approx(0.04)  # (0.02 + 0.06) / 2 seeds
    assert clip.loc["ppo", "max"] == pytest.approx(0.06) and clip.loc["ppo", "steps logged"] == 4
    assert clip.loc["grpo", "max"] == 0.0 and clip.loc["grpo", "seeds"] == 1
    assert clip.loc["ppo", "first"] == pytest.approx(0.03) and clip.loc["ppo", "last"] == pytest.approx(0.05)
    value = table[table.metric == "train/ppo/value_clipfrac"]
    assert list(value.arm) == ["ppo"] and value.iloc[0]["mean over steps"] == pytest.approx(0.3)
    assert value.iloc[0]["seeds"] == 1  # GRPO has no critic: no row, rather than a zero


def test_zero_std_share_per_language_follows_the_experiments_language_order():
    grpo = run("grpo", 0, [0] * 4, [0] * 4)
    grpo.history["train/adv/frac_zero_std/ja"] = [(1, 1.0), (5, 0.5)]
    grpo.history["train/adv/frac_zero_std/en"] = [(1, 0.0), (5, 0.25)]
    grpo.history["train/adv/frac_zero_std/all"] = [(1, 0.5), (5, 0.375)]  # the overall share: its own row
    table = analysis.diagnostics_table(comparison([grpo]))
    flat = table[table.metric.str.startswith("train/adv/frac_zero_std/")]
    assert list(flat.diagnostic) == ["zero-std share, en", "zero-std share, ja"]  # the comparison's order: en, ja
    assert list(flat["first"]) == [0.0, 1.0] and list(flat["last"]) == [0.25, 0.5]
    assert list(flat["mean over steps"]) == [0.125, 0.75]
