"""Report figures as PNG files: the forest plot of paired differences, training curves per language
(each seed thin, the mean thick), final-metric bars with intervals.

    forest_figure(paired rows, metrics, rows, arms, colours, path)       the first screen's plot
    curves_figure({"ar": {"grpo": (x, values (S, T))}}, "reward", "mean reward", path)
    bars_figure(frame[language, arm, mean, low, high], "exact match", "exact match", path)

Takes numbers already computed (analysis, stats) and draws them; computes nothing but a band's
t-interval from the seeds it is given. Made with matplotlib's object API (matplotlib.figure.Figure,
rendered by Agg when saved): no pyplot, no global state, no display.

An arm keeps its colour in every figure of a report: its colour is its position in `arm_order`
(pass the same list everywhere), from the Okabe-Ito palette, which stays distinguishable for the
common colour-vision deficiencies (Okabe & Ito 2008, "Color Universal Design"). Text is drawn with
DejaVu Sans and, for the characters it lacks (Japanese, Chinese, Korean), the first CJK font matplotlib
finds (Noto Sans CJK, from the fonts-noto-cjk package); `cjk_font()` says which, or None, and the report
warns when it must draw CJK text without one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

# Okabe-Ito without its yellow (too pale on white), then tab10 colours it does not already cover.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "tab:brown", "tab:olive", "tab:gray", "tab:cyan", "tab:red")
# Verdicts (mlgrpo.reports.evidence), the same colours as the report's table cells.
VERDICT_COLOURS = {"better": "#009E73", "worse": "#D55E00", "negligible": "#56B4E9", "no difference": "#6E6E6E",
                   "unclear": "#CC79A7", "untestable": "#B0B0B0"}
ARM_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*")
MAX_COLUMNS = 4
_BAR_COLUMNS = ("language", "arm", "mean", "low", "high")
CJK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK KR", "Source Han Sans",
             "IPAexGothic", "IPAGothic", "TakaoGothic", "WenQuanYi Zen Hei", "Droid Sans Fallback")

Curve = tuple[np.ndarray, np.ndarray]  # (x (T,), values (S, T)): one row per seed, NaN where a seed lacks a step


@functools.cache
def cjk_font() -> str | None:
    """The first CJK-capable font matplotlib knows (CJK_FONTS order), or None."""
    from matplotlib import font_manager

    known = {entry.name for entry in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FONTS if name in known), None)


def _fonts():
    """matplotlib's per-glyph fallback: DejaVu Sans first, the CJK font for what it lacks."""
    from matplotlib import rc_context

    # A list of families in font.family (not font.sans-serif) is what turns on matplotlib's per-glyph fallback.
    return rc_context({"font.family": ["DejaVu Sans"] + ([cjk_font()] if cjk_font() else [])})


def _drawn(function):
    @functools.wraps(function)
    def with_fonts(*args, **kwargs):
        with _fonts():
            return function(*args, **kwargs)
    return with_fonts


def arm_colours(arms: Sequence[str], arm_order: Sequence[str] | None = None) -> dict[str, str]:
    """arm -> colour by position in arm_order (default: sorted arm names); an arm not in it is an error."""
    order = list(arm_order) if arm_order is not None else sorted(set(arms))
    unknown = [a for a in arms if a not in order]
    if unknown:
        raise ValueError(f"arms {unknown} are not in arm_order {order}: pass every arm of the report in "
                         "arm_order, so that each arm keeps one colour across figures")
    return {arm: PALETTE[order.index(arm) % len(PALETTE)] for arm in order}


@_drawn
def curves_figure(
    curves: Mapping[str, Mapping[str, Curve]],
    title: str,
    ylabel: str,
    path: Path,
    xlabel: str = "step",
    arm_order: Sequence[str] | None = None,
    band_seeds: int | None = None,
) -> Path:
    """One panel per language (at most 4 columns): each seed of each arm as a thin line, the arm's mean over
    seeds as a thick one; writes and returns path.

    curves[language][arm] = (x (T,), values (S, T)), NaN where a seed did not log a step (it breaks that
    seed's line; the mean is over the seeds that have the step). A 95% t-band around the mean is drawn
    only with at least `band_seeds` seeds at a step (None: never): with two seeds it would be +-12.7
    standard errors, wider than the metric's range. A panel with no finite point says "no data". The y
    axis is per panel: the figure compares arms within a language.
    """
    if not curves:
        raise ValueError(f"curves_figure({title!r}) got no languages; skip the figure when there is nothing to plot")
    arms = list(dict.fromkeys(arm for per_arm in curves.values() for arm in per_arm))
    colours = arm_colours(arms, arm_order)
    columns = min(MAX_COLUMNS, len(curves))
    rows = math.ceil(len(curves) / columns)
    figure = Figure(figsize=(3.6 * columns + 0.4, 2.7 * rows + 1.0), layout="constrained")
    axes = figure.subplots(rows, columns, sharex=True, squeeze=False).ravel()
    for axis, (language, per_arm) in zip(axes, curves.items()):
        drawn = False
        for arm in (a for a in colours if a in per_arm):
            drawn |= _plot_curve(axis, language, arm, per_arm[arm], colours[arm], band_seeds)
        if not drawn:
            axis.text(0.5, 0.5, "no data", transform=axis.transAxes, ha="center", va="center", color="grey")
        axis.set_title(language)
        axis.grid(alpha=0.3)
        _few_ticks(axis)
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


def _few_ticks(axis) -> None:
    """At most 5 ticks per axis: long step numbers on narrow panels overlap otherwise."""
    from matplotlib.ticker import MaxNLocator

    axis.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    axis.yaxis.set_major_locator(MaxNLocator(nbins=5))


def _plot_curve(axis, language: str, arm: str, curve: Curve, colour: str, band_seeds: int | None) -> bool:
    """Draws one arm's seeds, mean and (with enough seeds) band; True if it had a finite point."""
    from mlgrpo.reports.stats import curve_band

    x, values = np.asarray(curve[0], dtype=float), np.atleast_2d(np.asarray(curve[1], dtype=float))
    if x.ndim != 1 or values.ndim != 2 or values.shape[1] != x.shape[0]:
        raise ValueError(f"curve {language}/{arm}: x must be (T,) and values (seeds, T) of one length, "
                         f"got shapes {x.shape} and {values.shape}")
    band = curve_band(values)
    finite = np.isfinite(x) & np.isfinite(band.mean)
    if not finite.any():
        return False
    single = finite.sum() == 1  # a line through one point is invisible: mark it
    if values.shape[0] > 1:
        for row in values:
            axis.plot(x, row, color=colour, linewidth=0.7, alpha=0.35)
    axis.plot(x, band.mean, color=colour, linewidth=1.8, marker="o" if single else None, markersize=4)
    seeds = (~np.isnan(values)).sum(axis=0)
    shade = np.isfinite(band.low) & np.isfinite(band.high) & (seeds >= (band_seeds or np.inf))
    if shade.any():
        axis.fill_between(x, np.where(shade, band.low, 0.0), np.where(shade, band.high, 0.0), where=shade,
                          color=colour, alpha=0.15, linewidth=0)
    return True


@_drawn
def forest_figure(rows: pd.DataFrame, metrics: Sequence[str], order: Sequence[str], arms: Sequence[str],
                  colours: Mapping[str, str], path: Path, baseline: str) -> Path:
    """Paired differences (arm - baseline) with their 95% intervals: a panel per metric, a row per language
    and aggregate, a marker per arm, coloured by its verdict; the shaded band is +-the metric's smallest
    effect of interest, the dashed line 0. Untestable rows show their point, if any, as a cross without an
    interval. `rows`: analysis.paired_table rows (metric, language, arm, difference, low, high, verdict,
    smallest_effect)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    metrics = [m for m in metrics if (rows.metric == m).any()]
    if not metrics:
        raise ValueError("forest_figure got no rows; skip the figure when there is nothing to compare")
    figure = Figure(figsize=(3.3 * len(metrics) + 1.4, 0.22 * len(order) * max(1, len(arms)) ** 0.5 + 1.6),
                    layout="constrained")
    axes = figure.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    step = 0.6 / max(1, len(arms))
    for axis, metric in zip(axes, metrics):
        found = rows[rows.metric == metric]
        delta = float(found.smallest_effect.max()) if len(found) else 0.0
        if delta > 0:
            axis.axvspan(-delta, delta, color="#000000", alpha=0.07, linewidth=0)
        axis.axvline(0.0, color="black", linewidth=0.8, linestyle="--")
        for k, arm in enumerate(arms):
            offset = (k - (len(arms) - 1) / 2) * step
            for row in found[found.arm == arm].itertuples():
                y = order.index(row.language) + offset
                _forest_point(axis, y, row, ARM_MARKERS[k % len(ARM_MARKERS)])
        axis.set_title(f"{metric}\n({'arm' if len(arms) > 1 else arms[0]} - {baseline})", fontsize=10)
        axis.grid(axis="x", alpha=0.3)
        axis.xaxis.set_major_locator(MaxNLocator(nbins=4))
        aggregates = [i for i, name in enumerate(order) if name in ("macro", "worst", "gap")]
        if aggregates:
            axis.axhline(aggregates[0] - 0.5, color="grey", linewidth=0.6)
    axes[0].set_yticks(range(len(order)), [_row_label(name) for name in order])
    axes[0].set_ylim(len(order) - 0.5, -0.5)
    handles = [Line2D([], [], color="black", marker=ARM_MARKERS[k % len(ARM_MARKERS)], linestyle="", label=arm)
               for k, arm in enumerate(arms)] if len(arms) > 1 else []
    handles += [Line2D([], [], color=colour, marker="o", linewidth=2, label=verdict)
                for verdict, colour in VERDICT_COLOURS.items() if (rows.verdict == verdict).any()]
    figure.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 7), frameon=False,
                  fontsize=8)
    return _save(figure, path)


def _forest_point(axis, y: float, row, marker: str) -> None:
    colour = VERDICT_COLOURS.get(row.verdict, "black")
    if not math.isfinite(row.difference):
        return
    if row.verdict == "untestable" or not (math.isfinite(row.low) and math.isfinite(row.high)):
        axis.plot(row.difference, y, marker="x", color=colour, markersize=6)
        return
    axis.plot([row.low, row.high], [y, y], color=colour, linewidth=2.2, solid_capstyle="butt")
    axis.plot(row.difference, y, marker=marker, color=colour, markersize=5.5, markeredgecolor="white",
              markeredgewidth=0.6)


def _row_label(name: str) -> str:
    return {"worst": "worst language", "gap": "gap (best - worst)"}.get(name, name)


@_drawn
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
