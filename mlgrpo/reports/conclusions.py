"""The verdict in words, generated from the judged paired table (evidence.judge): never more than the
intervals support, and never less.

For each arm against the baseline: one line that counts the verdicts over the headline metrics, then
what is better or worse (with size and interval), what is negligible, what is unclear, and what is
untestable and why; then differences on other metrics; then what the number of seeds allows.

    grpo vs ppo, over reward/total, exact_match and chrf on 6 languages and macro / worst / gap:
        1 better, 0 worse, 4 negligible, 19 no difference, 0 unclear, 9 untestable.
    better: exact_match on ja: +0.060 [+0.020, +0.100].
"""

from __future__ import annotations

import pandas as pd

from mlgrpo.reports.evidence import CLAIMS, VERDICTS

# Metrics the verdict speaks about, in this order, when the runs logged them; other metrics are in the tables.
HEADLINE = ("reward/total", "exact_match", "pass_at_1", "chrf", "language_consistency")
AGGREGATE_ROWS = ("macro", "worst", "gap")
LISTED = 6  # items named per kind of verdict before "and N more"


def headline_metrics(metrics: list[str], limit: int = 3) -> list[str]:
    chosen = [m for m in HEADLINE if m in metrics][:limit]
    return chosen or metrics[:1]


def fmt(value: float) -> str:
    return f"{value:+.3f}" if abs(value) < 100 else f"{value:+.1f}"


def interval(row) -> str:
    if pd.isna(row.low) or pd.isna(row.high):
        return f"{fmt(row.difference)} (no interval)"
    return f"{fmt(row.difference)} [{fmt(row.low)}, {fmt(row.high)}]"


def where(language: str) -> str:
    return {"macro": "the macro average", "worst": "the worst language", "gap": "the gap between languages"}.get(
        language, language)


def verdict_lines(paired: pd.DataFrame, headline: list[str], seeds: int, min_seeds: int) -> list[str]:
    """Sentences for the first screen; `paired` is analysis.paired_table (every metric)."""
    if paired.empty:
        return ["Only one arm: there is nothing to compare, so no conclusion about differences is drawn."]
    out = []
    for (arm, vs), rows in paired.groupby(["arm", "vs"], sort=False):
        main = rows[rows.metric.isin(headline)]
        languages = sorted(set(main.language) - set(AGGREGATE_ROWS))
        counts = ", ".join(f"{n} {v}" for v in VERDICTS if (n := int((main.verdict == v).sum())))
        out.append(f"{arm} vs {vs}: {counts or 'nothing'} of {len(main)} comparisons ({_names(headline)}, "
                   f"each on {len(languages)} languages and macro / worst / gap).")
        for verdict in CLAIMS:
            found = main[main.verdict == verdict]
            if len(found):
                out.append(f"{arm} is {verdict} than {vs} on " + _listed(
                    [f"{row.metric} on {where(row.language)}: {interval(row)}" for row in found.itertuples()]) + ".")
        negligible = main[main.verdict == "negligible"]
        if len(negligible):
            out.append("Negligible (smaller than the smallest effect of interest, or within it): " + _listed(
                [f"{row.metric} on {where(row.language)} ({interval(row)})" for row in negligible.itertuples()]) + ".")
        unclear = main[main.verdict == "unclear"]
        if len(unclear):
            out.append("Unclear (the interval excludes 0, the adjusted test does not reject): " + _listed(
                [f"{row.metric} on {where(row.language)} ({interval(row)})" for row in unclear.itertuples()]) + ".")
        for reason, group in main[main.verdict == "untestable"].groupby("reason", sort=False):
            out.append(f"Untestable: {_rows(group)}: {reason}.")
        others = rows[~rows.metric.isin(headline) & rows.verdict.isin(CLAIMS)]
        if len(others):
            out.append(f"Other metrics where {arm} differs from {vs}: " + _listed(
                [f"{row.metric} {'higher' if row.difference > 0 else 'lower'} on {where(row.language)} "
                 f"({interval(row)})" for row in others.itertuples()]) + ".")
    if seeds < min_seeds:
        out.append(f"With {seeds} seed{'s' if seeds != 1 else ''} per arm, every verdict holds for the trained models these seeds produced, "
                   f"on the held-out prompts; a claim about the algorithm itself needs {min_seeds} seeds "
                   f"(report.min_seeds: the fewest with which a test over seeds can reach p < 0.05).")
    return out


def _names(metrics: list[str]) -> str:
    return metrics[0] if len(metrics) == 1 else ", ".join(metrics[:-1]) + " and " + metrics[-1]


def _listed(items: list[str]) -> str:
    shown = "; ".join(items[:LISTED])
    return shown + (f"; and {len(items) - LISTED} more (see the table)" if len(items) > LISTED else "")


def _rows(group: pd.DataFrame) -> str:
    """"chrf on every row" or "exact_match on ar, en"."""
    parts = []
    for metric, rows in group.groupby("metric", sort=False):
        parts.append(f"{metric} on {', '.join(rows.language)}")
    return "; ".join(parts)
