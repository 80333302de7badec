"""The report's tables, as DataFrames computed from a Comparison (no rendering, no MLflow).

    final_table       per metric, language (+ macro / worst / gap) and arm: mean and 95% CI
    paired_table      per metric, language and pair of arms: difference, CI, p, Holm-adjusted p, verdict and why
    stability_table   per arm: volatility of reward and loss, non-finite and zero-std counts, collapse flags
    convergence_table per arm: steps and samples to 90% of the way from the start to the final reward
    cost_table        per arm: samples/s, tokens/s, peak memory, wall time, and each arm / baseline ratios
    diagnostics_table per arm and training diagnostic (clip fractions, KL, entropy...): mean and max over the
                      logged steps, so that "PPO clips" is a number, not a reading of a curve

CIs: stats.bootstrap_ci over prompts and seeds (seeds only where a metric has no per-prompt score).
Holm's correction runs over the languages of one metric and one pair of arms (the family a reader
scans); macro / worst / gap rows keep their own bootstrap p-value and are marked as such.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mlgrpo.reports import stats
from mlgrpo.reports.aggregate import aggregate_differences, aggregate_intervals
from mlgrpo.reports.collect import Comparison
from mlgrpo.reports.evidence import judge
from mlgrpo.reports.settings import ReportConfig
from mlgrpo.tracking.names import LOWER, direction

N_BOOT = 2000


def baseline_arm(comp: Comparison) -> str | None:
    """The arm others are compared against: one whose algorithm is PPO, else the first arm."""
    for arm in comp.arms:
        if any(run.tags.get("algorithm") == "ppo" for run in comp.runs[arm].values()):
            return arm
    return comp.arms[0] if comp.arms else None


def pairs(comp: Comparison) -> list[tuple[str, str]]:
    base = baseline_arm(comp)
    return [(arm, base) for arm in comp.arms if arm != base]


def _ci_kind(interval: stats.Interval, per_prompt: bool, min_seeds: int) -> str:
    if interval.n_seeds == 0:
        return "no data"
    if not per_prompt:
        if interval.n_seeds < min_seeds:
            return f"unavailable ({interval.n_seeds} seed(s), one value each: fewer than {min_seeds})"
        return "seeds"
    return "prompts x seeds" if interval.seeds_resampled else "prompts only (1 seed)"


def final_table(comp: Comparison, metrics: list[str], settings: ReportConfig = ReportConfig()) -> pd.DataFrame:
    rows = []
    for metric in metrics:
        lower = direction(metric) == LOWER
        for arm in comp.arms:
            arrays, per_prompt = [], []
            for lang in comp.languages:
                x = comp.scores(arm, metric, lang)
                per_prompt.append(bool(comp.item_ids(metric, lang)))
                arrays.append(x)
                ci = stats.bootstrap_ci(x, n_boot=N_BOOT, seed=0)
                rows.append(_final_row(metric, lang, arm, ci, _ci_kind(ci, per_prompt[-1], settings.min_seeds)))
            if len(comp.languages) > 1:
                for row, ci in aggregate_intervals(arrays, lower, n_boot=N_BOOT, seed=0).items():
                    rows.append(_final_row(metric, row, arm, ci, _ci_kind(ci, all(per_prompt), settings.min_seeds)))
    return pd.DataFrame(rows, columns=["metric", "language", "arm", "mean", "low", "high", "seeds", "prompts", "ci"])


def _final_row(metric, language, arm, ci: stats.Interval, kind: str) -> dict:
    unavailable = kind.startswith("unavailable") or kind == "no data"
    return {"metric": metric, "language": language, "arm": arm, "mean": ci.mean,
            "low": math.nan if unavailable else ci.low, "high": math.nan if unavailable else ci.high,
            "seeds": ci.n_seeds, "prompts": ci.n_items if kind.startswith("prompts") else 0, "ci": kind}


PAIRED_COLUMNS = ["metric", "language", "arm", "vs", "difference", "low", "high", "p", "p_adjusted", "adjustment",
                  "pairs", "seeds", "per_prompt", "smallest_effect", "verdict", "reason", "conditional"]


def paired_table(comp: Comparison, metrics: list[str], settings: ReportConfig = ReportConfig()) -> pd.DataFrame:
    """Every (metric, language or aggregate, arm vs baseline): the paired difference, its 95% interval, p,
    and evidence.judge's verdict with its reason. Seed-level-only differences (no per-prompt scores) show
    no interval below min_seeds: a bootstrap over two or three seeds has a handful of distinct replicates."""
    rows = []
    for metric in metrics:
        lower = direction(metric) == LOWER
        for a, b in pairs(comp):
            family, arrays_a, arrays_b = [], [], []
            for lang in comp.languages:
                ids = comp.item_ids(metric, lang)
                xa, xb = comp.scores(a, metric, lang, ids), comp.scores(b, metric, lang, ids)
                arrays_a.append(xa)
                arrays_b.append(xb)
                family.append((lang, bool(ids), stats.paired_difference(xa, xb, n_boot=N_BOOT, seed=0)))
            adjusted = stats.holm([d.p_value for _, _, d in family])
            for (lang, per_prompt, diff), p_holm in zip(family, adjusted):
                rows.append(_pair_row(metric, lang, a, b, diff, float(p_holm), "holm", lower, per_prompt, settings))
            if len(comp.languages) > 1:
                per_prompt = all(flag for _, flag, _ in family)
                for row, diff in aggregate_differences(arrays_a, arrays_b, lower, n_boot=N_BOOT, seed=0).items():
                    # gap: smaller is better whatever the metric's direction
                    rows.append(_pair_row(metric, row, a, b, diff, diff.p_value, "bootstrap", lower or row == "gap",
                                          per_prompt, settings))
    return pd.DataFrame(rows, columns=PAIRED_COLUMNS)


def _pair_row(metric, language, a, b, diff: stats.Difference, p_adjusted, adjustment, lower, per_prompt,
              settings: ReportConfig) -> dict:
    smallest = settings.smallest_effect(metric)
    seeds = diff.n_seeds if per_prompt else diff.n_pairs  # one value per seed: a pair is a seed
    found = judge(diff.mean, diff.low, diff.high, p_adjusted, pairs=diff.n_pairs, seeds=seeds, per_prompt=per_prompt,
                  higher_is_better=not lower, smallest=smallest, min_seeds=settings.min_seeds, adjustment=adjustment)
    shown = per_prompt or seeds >= settings.min_seeds
    return {"metric": metric, "language": language, "arm": a, "vs": b, "difference": diff.mean,
            "low": diff.low if shown else math.nan, "high": diff.high if shown else math.nan, "p": diff.p_value,
            "p_adjusted": p_adjusted, "adjustment": adjustment, "pairs": diff.n_pairs, "seeds": seeds,
            "per_prompt": per_prompt, "smallest_effect": smallest, "verdict": found.verdict, "reason": found.reason,
            "conditional": found.conditional}


def _seed_values(comp: Comparison, arm: str, summary) -> list[float]:
    return [summary(run) for run in comp.runs[arm].values()]


def _mean(values) -> float:
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(values)) if values else math.nan


def reward_key(comp: Comparison) -> str:
    for key in ("train/reward/macro", "train/reward/all", "train/reward"):
        if comp.has_metric(key):
            return key
    return "train/reward/macro"


def stability_table(comp: Comparison) -> pd.DataFrame:
    key = reward_key(comp)
    rows = []
    for arm in comp.arms:
        def history(run, name):
            return np.array([v for _, v in run.history.get(name, [])], dtype=float)

        nonfinite = sum(stats.count_nonfinite(history(run, k)) for run in comp.runs[arm].values()
                        for k in run.history if k.startswith("train/"))
        rows.append({
            "arm": arm,
            "reward volatility": _mean(_seed_values(comp, arm, lambda r: stats.volatility(history(r, key)))),
            "loss volatility": _mean(_seed_values(comp, arm, lambda r: stats.volatility(history(r, "train/loss")))),
            "non-finite values logged": nonfinite,
            "non-finite loss steps skipped": sum(int(r.metrics.get("train/nonfinite_loss_steps", 0) or 0)
                                                 for r in comp.runs[arm].values()),
            "non-finite rewards": sum(int(r.metrics.get("train/adv/nonfinite_rewards", 0) or 0)
                                      for r in comp.runs[arm].values()),
            "zero-std groups (mean share)": _mean(_seed_values(
                comp, arm, lambda r: float(np.nanmean(history(r, "train/frac_reward_zero_std")))
                if r.history.get("train/frac_reward_zero_std") else math.nan)),
            "collapse flags (last eval)": sum(int(v == 1.0) for r in comp.runs[arm].values()
                                              for k, v in r.metrics.items() if k.startswith("eval/collapse/")),
        })
    return pd.DataFrame(rows)


def samples_per_step(run) -> float:
    """Completions per optimizer step: per-device batch x accumulation x processes (system.world_size tag)."""
    def number(key, default):
        try:
            return float(run.params.get(key, default))
        except ValueError:
            return float(default)

    try:
        world = float(run.tags.get("system.world_size", 1))
    except ValueError:
        world = 1.0
    return number("training.per_device_train_batch_size", 8) * number("training.gradient_accumulation_steps", 1) * world


def convergence_table(comp: Comparison, fraction: float = 0.9) -> pd.DataFrame:
    key = reward_key(comp)
    rows = []
    for arm in comp.arms:
        steps_needed, samples_needed, finals = [], [], []
        for run in comp.runs[arm].values():
            points = run.history.get(key, [])
            if not points:
                continue
            steps = np.array([s for s, _ in points], dtype=float)
            values = np.array([v for _, v in points], dtype=float)
            reached = stats.steps_to_fraction(steps, values, fraction=fraction)
            finals.append(float(np.nanmean(values[-3:])))
            if reached is not None:
                steps_needed.append(float(reached))
                samples_needed.append(float(reached) * samples_per_step(run))
        rows.append({"arm": arm, "metric": key, "final (mean of last 3 steps)": _mean(finals),
                     f"steps to {fraction:.0%}": _mean(steps_needed), f"samples to {fraction:.0%}": _mean(samples_needed),
                     "seeds": len(steps_needed)})
    return pd.DataFrame(rows)


COST_COLUMNS = {"samples/s": "system/samples_per_sec", "tokens/s": "system/tokens_per_sec",
                "peak memory (MB)": "system/peak_memory_mb"}


def wall_seconds(run) -> float:
    """Training time of a run: the Trainer's own runtime (what it logged at the end), else the MLflow run's
    start to end, which also counts evaluations and any wait for a free worker."""
    runtime = run.metrics.get("train/summary/runtime")
    if runtime is not None and math.isfinite(runtime):
        return float(runtime)
    return (run.end_ms - run.start_ms) / 1000.0 if run.end_ms and run.start_ms else math.nan


def cost_table(comp: Comparison) -> pd.DataFrame:
    rows = []
    for arm in comp.arms:
        row = {"arm": arm}
        for column, key in COST_COLUMNS.items():
            row[column] = _mean(_seed_values(comp, arm, lambda r, k=key: r.metrics.get(k)))
        row["wall time (s)"] = _mean(_seed_values(comp, arm, wall_seconds))
        rows.append(row)
    frame = pd.DataFrame(rows)
    base = baseline_arm(comp)
    if base is not None and len(comp.arms) > 1:
        reference = frame.set_index("arm").loc[base]
        for arm in comp.arms:
            if arm == base:
                continue
            ratio = {"arm": f"{arm} / {base}"}
            for column in list(COST_COLUMNS) + ["wall time (s)"]:
                value, ref = frame.set_index("arm").loc[arm, column], reference[column]
                ratio[column] = value / ref if ref and not math.isnan(ref) else math.nan
            frame = pd.concat([frame, pd.DataFrame([ratio])], ignore_index=True)
    return frame


# The training diagnostics the report tabulates (and draws: curves.SCALAR_CURVES), with what each measures.
DIAGNOSTICS = (("train/clip_ratio/region_mean", "clip fraction (share of tokens whose ratio is clipped)"),
               ("train/ppo/value_clipfrac", "PPO value clip fraction"),
               ("train/kl", "KL to the reference (train)"),
               ("eval/kl_ref/macro", "KL to the initial policy (held-out, per token)"),
               ("train/entropy", "entropy"),
               ("train/frac_reward_zero_std", "zero-std share (rows in groups without reward spread)"))
ZERO_STD = "train/adv/frac_zero_std/"  # + language: the same share among one language's rows (DAPO's starvation)


def diagnostics_table(comp: Comparison) -> pd.DataFrame:
    """Per arm and diagnostic that the arm logged: the mean over its logged steps (mean over seeds), the
    largest value any seed logged, the first and the last value (mean over seeds: does it grow?), and how many
    steps and seeds that covers. The zero-std share also per language, in the experiment's language order."""
    rows = []
    languages = [k.removeprefix(ZERO_STD) for k in sorted({k for a in comp.arms for r in comp.runs[a].values()
                                                            for k in r.history if k.startswith(ZERO_STD)})
                 if k != ZERO_STD + "all"]  # "all" is the overall share, the row above
    order = {lang: i for i, lang in enumerate(comp.languages)}
    languages.sort(key=lambda lang: (order.get(lang, len(order)), lang))
    keys = list(DIAGNOSTICS) + [(ZERO_STD + lang, f"zero-std share, {lang}") for lang in languages]
    for arm in comp.arms:
        for key, label in keys:
            per_seed = [np.array([v for _, v in run.history.get(key, [])], dtype=float)
                        for run in comp.runs[arm].values()]
            per_seed = [values[np.isfinite(values)] for values in per_seed]
            per_seed = [values for values in per_seed if values.size]
            if not per_seed:
                continue
            rows.append({"arm": arm, "diagnostic": label, "metric": key,
                         "mean over steps": _mean([float(values.mean()) for values in per_seed]),
                         "max": float(max(values.max() for values in per_seed)),
                         "first": _mean([float(values[0]) for values in per_seed]),
                         "last": _mean([float(values[-1]) for values in per_seed]),
                         "steps logged": int(sum(values.size for values in per_seed)), "seeds": len(per_seed)})
    return pd.DataFrame(rows, columns=["arm", "diagnostic", "metric", "mean over steps", "max", "first", "last",
                                       "steps logged", "seeds"])


EFFECTIVE = "effective."  # params of what each arm trains with, defaults included (experiments/effective.py)


def differences_table(comp: Comparison) -> pd.DataFrame:
    """The settings whose value differs between arms, one column per arm (its first seed's run).

    Runs that carry effective.* params are compared on those: what each arm trains with, defaults included
    (PPO's critic, where the KL acts, the update schedule, TRL's own defaults). Older runs: every param."""
    first = {arm: next(iter(comp.runs[arm].values())) for arm in comp.arms if comp.runs[arm]}
    keys = sorted({k for run in first.values() for k in run.params})
    effective = [k for k in keys if k.startswith(EFFECTIVE)]
    if effective:  # a setting one arm has as a whole ("critic": "none") and another in parts: shown by part
        parents = {k.rsplit(".", i)[0] for k in effective for i in range(1, k.count("."))}
        keys = [k for k in effective if k not in parents]
    rows = []
    for key in keys:
        values = {arm: _param(run.params, key) for arm, run in first.items()}
        if len(set(values.values())) > 1:
            rows.append({"setting": key.removeprefix(EFFECTIVE), **values})
    return pd.DataFrame(rows, columns=["setting", *first])


def _param(params: dict[str, str], key: str) -> str:
    """The value at `key`, or the whole value of the nearest enclosing key ("none" for critic.learning_rate)."""
    while key not in params and "." in key.removeprefix(EFFECTIVE):
        key = key.rsplit(".", 1)[0]
    return params.get(key, "(not set)")


def schedule_lines(comp: Comparison) -> list[str]:
    """One line per arm: its update schedule and where its KL acts (from the effective.* params)."""
    out = []
    for arm in comp.arms:
        if not comp.runs[arm]:
            continue
        p = next(iter(comp.runs[arm].values())).params
        if EFFECTIVE + "update.minibatches" not in p:
            continue
        u = {k.removeprefix(EFFECTIVE + "update."): v for k, v in p.items() if k.startswith(EFFECTIVE + "update.")}
        kl = p.get(EFFECTIVE + "kl")
        kl = kl if kl is not None else (f"{p.get(EFFECTIVE + 'kl.coef')} x {p.get(EFFECTIVE + 'kl.estimator')} in the "
                                        f"{p.get(EFFECTIVE + 'kl.placement')}")
        prompts = str(u["rollout_prompts"])  # "32", or with a group schedule "32, 16 from step 100"
        prompts = f"{prompts} prompts" if prompts.isdigit() else f"prompts: {prompts}"
        out.append(f"{arm}: rollouts of {u['rollout_completions']} completions ({prompts}), "
                   f"{u['minibatches']} minibatches of {u['minibatch_completions']} completions, {u['epochs']} "
                   f"epoch(s): {u['steps_per_rollout']} optimiser steps per rollout (policy ratio {u['policy_ratio']}); "
                   f"KL {kl}")
    return out


def runs_table(comp: Comparison, metrics: list[str]) -> pd.DataFrame:
    """One row per run: its status, wall time and, per metric, the macro held-out value at the first and the
    last evaluation (eval/<metric>/macro), so that "every run ends above its start" can be read off."""
    rows = []
    for arm in comp.arms:
        for seed, run in sorted(comp.runs[arm].items()):
            row = {"arm": arm, "seed": seed, "status": run.status, "wall time (s)": wall_seconds(run)}
            for metric in metrics:
                history = run.history.get(f"eval/{metric}/macro", [])
                first, last = (history[0][1], history[-1][1]) if len(history) > 1 else (math.nan, math.nan)
                row[f"{metric} start"], row[f"{metric} end"] = first, last
            rows.append(row)
    return pd.DataFrame(rows)


def change_table(comp: Comparison, metrics: list[str]) -> pd.DataFrame:
    """Per arm and per-prompt metric: the change from the first evaluation (step 0) to the last, paired by seed
    and prompt over every language, with its 95% interval (two-stage bootstrap over seeds, then prompts) and a
    sign-flip p. What RL changed in each arm on its own, before any arm is compared with another (issue 26)."""
    rows = []
    for arm in comp.arms:
        for metric in metrics:
            first, last = _first_last(comp, arm, metric)
            if first is None or not (~np.isnan(first) & ~np.isnan(last)).any():
                continue
            d = stats.paired_difference(last, first, n_boot=N_BOOT, seed=0)
            rows.append({"arm": arm, "metric": metric, "start": float(np.nanmean(first)), "end": float(np.nanmean(last)),
                         "change": d.mean, "low": d.low, "high": d.high, "p": d.p_value, "pairs": d.n_pairs,
                         "seeds": d.n_seeds})
    return pd.DataFrame(rows, columns=["arm", "metric", "start", "end", "change", "low", "high", "p", "pairs", "seeds"])


def _first_last(comp: Comparison, arm: str, metric: str) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(S, n) per-prompt scores of the first and the last evaluation, prompts keyed by (language, id); None when
    no run of the arm logged the metric per prompt at two evaluations."""
    scored = {}
    for seed, run in comp.runs[arm].items():
        first, last = comp.items(run, last=False), comp.items(run)
        if first is not last and first and last and metric in first and metric in last:
            scored[seed] = [{(lang, item): v for item, lang, v in zip(x["id"], x["language"], x[metric])
                             if v is not None and math.isfinite(v)} for x in (first, last)]
    if not scored:
        return None, None
    keys = sorted({k for pair in scored.values() for k in pair[0].keys() | pair[1].keys()})
    out = np.full((2, len(comp.seeds), len(keys)), math.nan)
    for i, seed in enumerate(comp.seeds):
        for j, key in enumerate(keys):
            for which in (0, 1):
                if seed in scored and key in scored[seed][which]:
                    out[which, i, j] = scored[seed][which][key]
    return out[0], out[1]
