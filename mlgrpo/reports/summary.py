"""The report's first screen: for each arm against the baseline, per language and macro / worst / gap,
the paired difference with its interval as a forest plot, one compact wide table coloured by verdict,
and the verdict in words; then the seed-level evidence (probability of improvement) where seeds allow.

Builds content (content.Section, Table, Figure) from the judged paired table; draws through figures,
words through conclusions; computes only the probability of improvement (improvement.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from mlgrpo.reports import figures
from mlgrpo.reports.collect import Comparison
from mlgrpo.reports.conclusions import AGGREGATE_ROWS, fmt, verdict_lines
from mlgrpo.reports.content import Figure, Section, Table
from mlgrpo.reports.improvement import probability_of_improvement
from mlgrpo.reports.settings import ReportConfig
from mlgrpo.tracking.names import LOWER, direction

CELL_CLASS = {"better": "v-better", "worse": "v-worse", "negligible": "v-negligible", "no difference": "v-none",
              "unclear": "v-unclear", "untestable": "v-untestable"}


def row_order(comp: Comparison, paired: pd.DataFrame) -> list[str]:
    present = set(paired.language)
    return [x for x in comp.languages if x in present] + [x for x in AGGREGATE_ROWS if x in present]


def answer_section(comp: Comparison, paired: pd.DataFrame, headline: list[str], baseline: str,
                   settings: ReportConfig, folder: Path) -> tuple[Section, list[Table]]:
    """The first section, and its tables (for CSV)."""
    seeds = min((len(comp.runs[arm]) for arm in comp.arms), default=0)
    bullets = verdict_lines(paired, headline, seeds, settings.min_seeds)
    main = paired[paired.metric.isin(headline)]
    if main.empty:
        return Section("The answer", bullets=bullets), []
    order = row_order(comp, main)
    arms = [arm for arm in comp.arms if arm != baseline]
    path = "figures/forest.png"
    figures.forest_figure(main, headline, order, arms, figures.arm_colours(comp.arms, comp.arms), folder / path,
                          baseline)
    deltas = ", ".join(f"{m} {settings.smallest_effect(m):g}" for m in headline)
    forest = Figure(path, f"Paired difference to {baseline} per language, with 95% intervals",
                    note=f"Colour: the verdict. Shaded: +-the smallest effect of interest ({deltas}; report.min_effect). "
                         "A cross without a line: untestable. Per-language intervals: two-stage bootstrap over seeds "
                         "and prompts; macro / worst / gap: the same bootstrap stratified by language, seeds shared.")
    frame, styles = wide_table(main, headline, order)
    table = Table("answer", f"Each arm minus {baseline}: difference [95% interval] and verdict", frame,
                  note="Green better, orange-red worse, blue negligible, grey no difference, purple unclear, "
                       "white untestable (the reasons are listed above). For the gap, narrower is better.",
                  styles=styles, css_class="evidence")
    improvement = improvement_table(comp, headline, baseline, settings)
    poi = Table("probability_of_improvement", "Probability of improvement over seeds (Agarwal et al. 2021)",
                improvement, note="P(a seed of the arm beats a seed of the baseline), mean over languages, ties half; "
                                  "95% bootstrap interval redrawing each arm's seeds (one draw for all languages: "
                                  "a seed is one run of every language). 0.5: no tendency either way.")
    if improvement.probability.notna().any():
        return Section("The answer", bullets=bullets, figures=[forest], tables=[table, poi]), [table, poi]
    return Section("The answer", bullets=bullets, figures=[forest], tables=[table]), [table, poi]


def wide_table(rows: pd.DataFrame, metrics: list[str], order: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cells, CSS classes): a row per (metric, arm), a column per language and aggregate."""
    cells, classes = [], []
    for metric in metrics:
        for arm in dict.fromkeys(rows.arm):
            found = rows[(rows.metric == metric) & (rows.arm == arm)].set_index("language")
            if found.empty:
                continue
            cell, style = {"metric, arm": f"{metric}\n{arm}"}, {"metric, arm": ""}
            for language in order:
                if language not in found.index:
                    cell[language], style[language] = "", ""
                    continue
                row = found.loc[language]
                cell[language] = _cell(row)
                style[language] = CELL_CLASS.get(row.verdict, "") + (" conditional" if row.conditional else "")
            cells.append(cell)
            classes.append(style)
    columns = ["metric, arm", *order]
    return pd.DataFrame(cells, columns=columns), pd.DataFrame(classes, columns=columns)


def _cell(row) -> str:
    if math.isnan(row.difference):
        return f"–\n{row.verdict}"
    if math.isnan(row.low) or math.isnan(row.high):
        return f"{fmt(row.difference)}\n(no interval)\n{row.verdict}"
    return f"{fmt(row.difference)}\n[{fmt(row.low)}, {fmt(row.high)}]\n{row.verdict}"


def improvement_table(comp: Comparison, metrics: list[str], baseline: str, settings: ReportConfig) -> pd.DataFrame:
    """Per arm and metric: P(arm > baseline) over seeds with its interval, or why it is not given."""
    out = []
    for arm in (a for a in comp.arms if a != baseline):
        for metric in metrics:
            x, y = (_seed_scores(comp, a, metric) for a in (arm, baseline))
            seeds = min(len(comp.runs[arm]), len(comp.runs[baseline]))
            row = {"metric": metric, "arm": arm, "vs": baseline, "probability": math.nan, "low": math.nan,
                   "high": math.nan, "seeds": seeds, "note": ""}
            if seeds < settings.min_seeds:
                row["note"] = (f"not computed: {seeds} seed(s) per arm, fewer than the {settings.min_seeds} a "
                               "seed-level claim needs (report.min_seeds)")
            else:
                found = probability_of_improvement(x, y, higher_is_better=direction(metric) != LOWER)
                row.update(probability=found.probability, low=found.low, high=found.high,
                           note=f"{found.languages} languages")
            out.append(row)
    return pd.DataFrame(out, columns=["metric", "arm", "vs", "probability", "low", "high", "seeds", "note"])


def _seed_scores(comp: Comparison, arm: str, metric: str):
    """(seeds, languages): each seed's mean over prompts (or logged value) per language."""
    import numpy as np

    columns = []
    for language in comp.languages:
        scores = comp.scores(arm, metric, language)
        valid = ~np.isnan(scores)
        with np.errstate(invalid="ignore", divide="ignore"):
            columns.append(np.where(valid.any(axis=1), np.where(valid, scores, 0).sum(axis=1) / valid.sum(axis=1),
                                    np.nan))
    return np.stack(columns, axis=1) if columns else np.empty((0, 0))
