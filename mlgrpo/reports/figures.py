"""Report figures as PNG files: training curves with bands and final-metric bars with intervals, per language.

    curves_figure({"ar": {"grpo": (x, mean, low, high), "ppo": ...}}, "reward", "mean reward", path)
    bars_figure(frame[language, arm, mean, low, high], "exact match", "exact match", path)

Takes numbers already computed (stats.curve_band gives mean, low, high per step; stats.bootstrap_ci
gives the final intervals) and draws them; computes no statistics. Made with matplotlib's object API
(matplotlib.figure.Figure, rendered by Agg when saved): no pyplot, no global state, no display.

An arm keeps its colour in every figure of a report: its colour is its position in `arm_order`
(pass the same list everywhere), from the Okabe-Ito palette, which stays distinguishable for the
common colour-vision deficiencies (Okabe & Ito 2008, "Color Universal Design").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

# Okabe-Ito without its yellow (too pale on white), then tab10 colours it does not already cover.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "tab:brown", "tab:olive", "tab:gray", "tab:cyan", "tab:red")
MAX_COLUMNS = 4
_BAR_COLUMNS = ("language", "arm", "mean", "low", "high")

Curve = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # (x, mean, low, high), each (n_steps,)


def arm_colours(arms: Sequence[str], arm_order: Sequence[str] | None = None) -> dict[str, str]:
    """arm -> colour by position in arm_order (default: sorted arm names); an arm not in it is an error."""
    order = list(arm_order) if arm_order is not None else sorted(set(arms))
    unknown = [a for a in arms if a not in order]
    if unknown:
        raise ValueError(f"arms {unknown} are not in arm_order {order}: pass every arm of the report in "
                         "arm_order, so that each arm keeps one colour across figures")
    return {arm: PALETTE[order.index(arm) % len(PALETTE)] for arm in order}


def curves_figure(
    curves: Mapping[str, Mapping[str, Curve]],
    title: str,
    ylabel: str,
    path: Path,
    xlabel: str = "step",
    arm_order: Sequence[str] | None = None,
    sharey: bool = False,
) -> Path:
    """One panel per language (at most 4 columns), a line per arm with its band; writes and returns path.

    curves[language][arm] = (x, mean, low, high), 1-D arrays of one length; NaN breaks the line, and
    the band is drawn only where both bounds are finite (stats.curve_band gives NaN bounds with
    fewer than 2 seeds). A panel with no finite point says "no data". The y axis is per panel by
    default: the figure compares arms within a language, and one language's scale must not flatten
    another's (sharey=True to compare languages).
    """
    if not curves:
        raise ValueError(f"curves_figure({title!r}) got no languages; skip the figure when there is nothing to plot")
    arms = list(dict.fromkeys(arm for per_arm in curves.values() for arm in per_arm))
    colours = arm_colours(arms, arm_order)
    columns = min(MAX_COLUMNS, len(curves))
    rows = math.ceil(len(curves) / columns)
    figure = Figure(figsize=(3.6 * columns + 0.4, 2.8 * rows + 0.9), layout="constrained")
    axes = figure.subplots(rows, columns, sharex=True, sharey=sharey, squeeze=False).ravel()
    for axis, (language, per_arm) in zip(axes, curves.items()):
        drawn = False
        for arm in (a for a in colours if a in per_arm):
            drawn |= _plot_curve(axis, language, arm, per_arm[arm], colours[arm])
        if not drawn:
            axis.text(0.5, 0.5, "no data", transform=axis.transAxes, ha="center", va="center", color="grey")
        axis.set_title(language)
        axis.grid(alpha=0.3)
    for axis in axes[len(curves):]:
        axis.set_visible(False)
    for axis in axes[max(0, len(curves) - columns):len(curves)]:  # the lowest visible panel of each column
        axis.xaxis.set_tick_params(labelbottom=True)
        axis.set_xlabel(xlabel)
    for axis in axes[::columns]:
        axis.set_ylabel(ylabel)
    _legend(figure, [a for a in colours if a in arms], colours, band=True)
    figure.suptitle(title)
    return _save(figure, path)


def _plot_curve(axis, language: str, arm: str, curve: Curve, colour: str) -> bool:
    """Draws one arm's line and band; True if it had a finite point."""
    x, mean, low, high = (np.asarray(v, dtype=float) for v in curve)
    if not x.shape == mean.shape == low.shape == high.shape or x.ndim != 1:
        raise ValueError(f"curve {language}/{arm}: x, mean, low, high must be 1-D of one length, "
                         f"got shapes {x.shape}, {mean.shape}, {low.shape}, {high.shape}")
    finite = np.isfinite(x) & np.isfinite(mean)
    if not finite.any():
        return False
    single = finite.sum() == 1  # a line through one point is invisible: mark it
    axis.plot(x, mean, color=colour, linewidth=1.4, marker="o" if single else None, markersize=4)
    band = np.isfinite(x) & np.isfinite(low) & np.isfinite(high)
    if band.any():
        axis.fill_between(x, np.where(band, low, 0.0), np.where(band, high, 0.0), where=band,
                          color=colour, alpha=0.2, linewidth=0, interpolate=False)
    return True


def bars_figure(
    table: pd.DataFrame,
    title: str,
    ylabel: str,
    path: Path,
    arm_order: Sequence[str] | None = None,
    language_order: Sequence[str] | None = None,
) -> Path:
    """Grouped bars: a group per language, a bar per arm, error bars low..high; writes and returns path.

    table: one row per (language, arm) with columns language, arm, mean, low, high (an Interval
    from stats.bootstrap_ci). A NaN mean leaves an empty slot marked "n/a"; NaN bounds draw no
    error bar. Languages in order of first appearance unless language_order is given.
    """
    missing = [c for c in _BAR_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"bars_figure({title!r}): the table lacks columns {missing}; it needs {list(_BAR_COLUMNS)}")
    if table.empty:
        raise ValueError(f"bars_figure({title!r}) got no rows; skip the figure when there is nothing to plot")
    duplicated = table[table.duplicated(["language", "arm"], keep=False)]
    if not duplicated.empty:
        raise ValueError(f"bars_figure({title!r}): more than one row for (language, arm) "
                         f"{sorted(set(zip(duplicated['language'], duplicated['arm'])))}")
    languages = list(language_order) if language_order is not None else list(dict.fromkeys(table["language"]))
    unplaced = sorted(set(table["language"]) - set(languages), key=str)
    if unplaced:
        raise ValueError(f"bars_figure({title!r}): languages {unplaced} are in the table but not in language_order")
    arms = list(dict.fromkeys(table["arm"]))
    colours = {a: c for a, c in arm_colours(arms, arm_order).items() if a in arms}
    by_key = {(r.language, r.arm): r for r in table.itertuples(index=False)}
    width = 0.8 / len(colours)
    figure = Figure(figsize=(max(4.5, 1.0 + len(languages) * (0.35 * len(colours) + 0.5)), 3.8), layout="constrained")
    axis = figure.add_subplot()
    for k, (arm, colour) in enumerate(colours.items()):
        xs = np.arange(len(languages)) + (k - (len(colours) - 1) / 2) * width
        for x, language in zip(xs, languages):
            row = by_key.get((language, arm))
            mean = math.nan if row is None else float(row.mean)
            if not math.isfinite(mean):
                axis.text(x, 0, "n/a", ha="center", va="bottom", rotation=90, fontsize=7, color="grey")
                continue
            axis.bar(x, mean, width, color=colour)
            low, high = float(row.low), float(row.high)
            if math.isfinite(low) and math.isfinite(high):
                # clipped at 0: a percentile interval can, rarely, sit entirely on one side of its mean
                yerr = [[max(0.0, mean - low)], [max(0.0, high - mean)]]
                axis.errorbar(x, mean, yerr=yerr, color="black", capsize=3, linewidth=1)
    axis.set_xticks(np.arange(len(languages)), [str(lang) for lang in languages])
    axis.set_ylabel(ylabel)
    axis.axhline(0, color="black", linewidth=0.6)
    axis.grid(axis="y", alpha=0.3)
    _legend(figure, list(colours), colours, band=False)
    figure.suptitle(title)
    return _save(figure, path)


def _legend(figure: Figure, arms: Sequence[str], colours: Mapping[str, str], band: bool) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if band:
        handles = [Line2D([], [], color=colours[a], linewidth=1.4) for a in arms]
    else:
        handles = [Patch(color=colours[a]) for a in arms]
    if handles:
        figure.legend(handles, list(arms), loc="outside lower center", ncol=min(len(arms), 6), frameon=False)


def _save(figure: Figure, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=110)
    return path
