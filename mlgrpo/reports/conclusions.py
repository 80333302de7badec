"""The verdict in words, generated from the judged paired table (evidence.judge): never more than the
intervals support, and never less.

What was compared; for each arm, the count of each verdict over the headline metrics, then what is
better or worse (with size and interval), negligible or unclear; what is untestable and why (once for
every arm it applies to); claims on other metrics; and what the number of seeds allows.

    grpo: 1 better, 4 negligible, 19 no difference, 9 untestable of 33.
    grpo is better on exact_match on ja: +0.060 [+0.020, +0.100].
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
    """+0.047, -2.014, +123.4; a bound that rounds to zero keeps one digit (-0.0002), or it reads as 0.

    >>> fmt(0.04712), fmt(-0.000198), fmt(123.45), fmt(0.0)
    ('+0.047', '-0.0002', '+123.5', '+0.000')
    """
    if value and abs(value) < 0.0005:
        return f"{value:+.1g}"
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
    main = paired[paired.metric.isin(headline)]
    languages = sorted(set(main.language) - set(AGGREGATE_ROWS))
    out = [f"Compared: {_names(headline)}, each on {len(languages)} languages and macro / worst / gap, every arm "
           f"against {paired.vs.iloc[0]}."]
    for arm, rows in main.groupby("arm", sort=False):
        counts = ", ".join(f"{n} {v}" for v in VERDICTS if (n := int((rows.verdict == v).sum())))
        out.append(f"{arm}: {counts or 'nothing'} of {len(rows)}.")
        for verdict in CLAIMS:
            found = rows[rows.verdict == verdict]
            if len(found):
                out.append(f"{arm} is {verdict} on " + _listed(
                    [f"{row.metric} on {where(row.language)}: {interval(row)}" for row in found.itertuples()]) + ".")
        for verdict, why in (("negligible", "smaller than the smallest effect of interest, or within it"),
                             ("unclear", "the interval excludes 0, the adjusted test does not reject")):
            found = rows[rows.verdict == verdict]
            if len(found):
                out.append(f"{arm}, {verdict} ({why}): " + _listed(
                    [f"{row.metric} on {where(row.language)} {interval(row)}" for row in found.itertuples()]) + ".")
    untestable = main[main.verdict == "untestable"]
    for reason, group in untestable.groupby("reason", sort=False):
        arms = list(dict.fromkeys(group.arm))
        who = "every arm" if len(arms) == main.arm.nunique() else ", ".join(arms)
        out.append(f"Untestable ({who}): {_rows(group.drop_duplicates(['metric', 'language']))}: {reason}.")
    others = paired[~paired.metric.isin(headline) & paired.verdict.isin(CLAIMS)]
    if len(others):
        parts = [f"{arm}: " + "; ".join(
            f"{'higher' if higher else 'lower'} {metric} on {', '.join(side.language)}"
            for (metric, higher), side in group.groupby(["metric", group.difference > 0], sort=False))
            for arm, group in others.groupby("arm", sort=False)]
        out.append("Other metrics where an arm differs (sizes in the table of every metric): " + ". ".join(parts) + ".")
    if seeds < min_seeds:
        out.append(f"With {seeds} seed{'s' if seeds != 1 else ''} per arm, every verdict holds for the trained models "
                   f"these seeds produced, on the held-out prompts; a claim about the algorithm itself, and the "
                   f"probability of improvement over seeds (Agarwal et al. 2021), need {min_seeds} seeds "
                   "(report.min_seeds: the fewest with which a test over seeds can reach p < 0.05).")
    return out


def _names(metrics: list[str]) -> str:
    return metrics[0] if len(metrics) == 1 else ", ".join(metrics[:-1]) + " and " + metrics[-1]


def _listed(items: list[str]) -> str:
    shown = "; ".join(items[:LISTED])
    return shown + (f"; and {len(items) - LISTED} more (see the table)" if len(items) > LISTED else "")


def _rows(group: pd.DataFrame) -> str:
    """"chrf on ar, en, macro" per metric."""
    return "; ".join(f"{metric} on {', '.join(rows.language)}" for metric, rows in group.groupby("metric", sort=False))
