"""Conclusions in words, generated only from the paired tests: never more than the intervals support.

A difference is stated only where stats.verdict found one (Holm-adjusted p below alpha AND the 95% CI
excluding 0), with its size and interval: "grpo above ppo on zh exact_match: +0.031 [0.012, 0.050]".
Everything else is said to show no significant difference, or to be untestable (too few pairs, one
seed without per-prompt scores), with the reason.
"""

from __future__ import annotations

import pandas as pd

# Metrics the conclusions speak about, in this order, when the runs logged them; other metrics are in the tables.
HEADLINE = ("reward/total", "exact_match", "chrf", "reward/chrf", "language_consistency", "pass_at_1")


def headline_metrics(metrics: list[str], limit: int = 3) -> list[str]:
    chosen = [m for m in HEADLINE if m in metrics][:limit]
    return chosen or metrics[:1]


WHERE = {"macro": "on the macro average of", "worst": "on the worst language's"}


def fmt_p(p: float, n_boot: int = 2000) -> str:
    """"= 0.012", or "< 0.0005" where no bootstrap replicate crossed zero (p is then below 1 / n_boot)."""
    return f"< {1 / n_boot:.2g}" if p == 0 else f"= {p:.3g}"


def fmt(value: float) -> str:
    return f"{value:+.3f}" if abs(value) < 100 else f"{value:+.1f}"


def conclusions(paired: pd.DataFrame, metrics: list[str], seeds: int, alpha: float = 0.05) -> list[str]:
    """One sentence per significant difference, one per (metric, pair) for the rest."""
    out = []
    if paired.empty:
        out.append("Only one arm: there is nothing to compare, so no conclusion about differences is drawn.")
    for metric in metrics if not paired.empty else ():
        for (arm, vs), rows in paired[paired.metric == metric].groupby(["arm", "vs"], sort=False):
            better = rows[rows.verdict.isin(["a_better", "b_better"])]
            for row in better.itertuples():
                which = "better" if row.verdict == "a_better" else "worse"
                higher = row.low > 0  # the side the interval shows, as stats.verdict reads it
                if row.language == "gap":
                    side = "wider" if higher else "narrower"
                    claim = f"{arm}'s gap between languages on {metric} is {side} than {vs}'s"
                else:
                    side = "above" if higher else "below"
                    claim = f"{arm} {side} {vs} {WHERE.get(row.language, 'on ' + row.language)} {metric}"
                out.append(f"{claim}: {fmt(row.difference)} [{fmt(row.low)}, {fmt(row.high)}], "
                           f"{row.adjustment} p {fmt_p(row.p_adjusted)} ({arm} {which}).")
            same = rows[rows.verdict == "no_difference"]
            for adjustment, group in same.groupby("adjustment", sort=False):
                how = "Holm across languages" if adjustment == "holm" else "bootstrap p, not Holm-adjusted"
                out.append(f"No significant difference between {arm} and {vs} on {metric} for "
                           f"{', '.join(group.language)} (alpha {alpha}, {how}).")
            untestable = rows[rows.verdict == "not_testable"]
            if len(untestable):
                why = ("one seed and no per-prompt scores" if seeds < 2 else "too few paired prompts or missing values")
                out.append(f"{arm} vs {vs} on {metric} cannot be tested for {', '.join(untestable.language)} ({why}).")
    if seeds < 2:
        out.append("One seed only: intervals cover the variation over prompts, not over training seeds; a second "
                   "seed is needed before a difference can be attributed to the algorithm rather than to the seed.")
    return out
