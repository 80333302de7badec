"""The report's figures of training and held-out curves, and of final metrics, from a Comparison.

    curve_figures(comp, final, headline, folder, band_seeds) -> {"curves": [Figure], "final": [Figure]}

Each seed is drawn as a thin line and the arm's mean over seeds as a thick one; a 95% t-band only with at
least `band_seeds` seeds (report.min_seeds): with fewer, a t-band is wider than the metric's range (two
seeds: +-12.7 standard errors) and says nothing the seeds themselves do not show. Training curves are a
rolling mean over about 1/10 of their logged points first (the per-step reward of a few prompts jumps by
more than arms differ); held-out curves are drawn as measured, at each evaluation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mlgrpo.reports import analysis
from mlgrpo.reports.collect import Comparison
from mlgrpo.reports.content import Figure

# Curves drawn per language (one panel each) and without a language (one panel each).
LANGUAGE_CURVES = (("train/reward", "reward (train)"), ("eval/reward/total", "held-out reward"),
                   ("eval/exact_match", "held-out exact match"))
SCALAR_CURVES = (("train/kl", "KL to the reference (train)"), ("eval/kl_ref/macro", "KL to the initial policy (held-out)"),
                 ("train/entropy", "entropy"), ("train/clip_ratio/region_mean", "clip fraction"),
                 ("train/ppo/value_clipfrac", "PPO value clip fraction"), ("train/ppo/value_loss", "PPO value loss"),
                 ("train/loss", "loss"))


def smoothing_window(steps: int) -> int:
    """A rolling mean over about 1/10 of the logged points (1 for short runs)."""
    return max(1, round(steps / 10))


def arm_curves(comp: Comparison, key: str, per_sample: bool = False) -> dict:
    """{arm: (x, values (S, T))} of metric `key` over each arm's seeds; x in steps, or in completions drawn."""
    from mlgrpo.reports.stats import rolling_mean

    out = {}
    for arm in comp.arms:
        steps, values = comp.curve(arm, key)
        if len(steps):
            if key.startswith("train/"):
                values = rolling_mean(values, smoothing_window(len(steps)))
            scale = analysis.samples_per_step(next(iter(comp.runs[arm].values()))) if per_sample else 1.0
            out[arm] = (steps * scale, values)
    return out


def curve_figures(comp: Comparison, final: pd.DataFrame, headline: list[str], folder: Path,
                  band_seeds: int) -> dict[str, list[Figure]]:
    from mlgrpo.reports import figures as draw

    seeds = min((len(comp.runs[arm]) for arm in comp.arms), default=0)
    how = ("each seed thin, the mean over seeds thick" if seeds > 1 else "one seed") + (
        "; band: 95% t-interval over seeds" if seeds >= band_seeds else
        f"; no band with {seeds} seed(s) (drawn from {band_seeds}: with fewer it spans more than the data)")
    curves, finals = [], []
    # (metric prefix, label, x in completions drawn: for arms whose steps hold different numbers of samples)
    for prefix, label, per_sample in [(p, lbl, False) for p, lbl in LANGUAGE_CURVES] + [
            ("train/reward", "reward (train) vs completions drawn", True)]:
        panels = {lang: found for lang in comp.languages if (found := arm_curves(comp, f"{prefix}/{lang}", per_sample))}
        if panels:
            name = f"figures/{prefix.replace('/', '_')}{'_samples' if per_sample else ''}.png"
            draw.curves_figure(panels, label, label.split(" vs ")[0], folder / name, arm_order=comp.arms,
                               xlabel="completions drawn" if per_sample else "step", band_seeds=band_seeds)
            curves.append(Figure(name, f"{label} per language", note=how))
    scalar = {label: found for key, label in SCALAR_CURVES if (found := arm_curves(comp, key))}
    if scalar:
        draw.curves_figure(scalar, "training diagnostics", "value", folder / "figures/diagnostics.png",
                           arm_order=comp.arms, band_seeds=band_seeds)
        curves.append(Figure("figures/diagnostics.png", "Diagnostics: " + ", ".join(scalar), note=how))
    for metric in headline:
        rows = final[(final.metric == metric) & final.language.isin(comp.languages)]
        if len(rows) and np.isfinite(rows["mean"].to_numpy(dtype=float)).any():
            name = f"figures/final_{metric.replace('/', '_')}.png"
            draw.bars_figure(rows, f"final {metric} per language (95% CI)", metric, folder / name,
                             arm_order=comp.arms, language_order=comp.languages)
            finals.append(Figure(name, f"Final {metric} per language and arm"))
    return {"curves": curves, "final": finals}
