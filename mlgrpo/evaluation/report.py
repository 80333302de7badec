"""The evaluation report: per-language scores, their aggregates, samples, and what was not measured;
and the comparison of two reports (change since step 0, cross-lingual collapse warnings).

Aggregates over languages, per metric ("und", rows without a language, is reported but never
aggregated: it is not a language):
    macro  mean over languages, each language counted once whatever its number of rows
    worst  the lowest value, or the highest for metrics where lower is better (code_switch, kl_ref);
           absent for metrics where neither is better (length)
    gap    best minus worst: the spread between languages (max - min, never negative)
Flat names follow `<prefix>/<metric>/<lang>` and `<prefix>/<metric>/{macro,worst,gap}`.
Pure data and arithmetic; knows nothing about models, metrics' internals or MLflow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from mlgrpo.errors import UserError

UNDETERMINED = "und"
# A language "collapses" when one of these falls by more than the threshold since step 0: it stops
# answering in its own language, or stops answering correctly.
COLLAPSE_METRICS = ("language_consistency", "exact_match")


def aggregate(per_language: Mapping[str, Mapping[str, float]],
              directions: Mapping[str, str | None]) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """({metric: {"macro", "worst", "gap"}}, {metric: worst language}) over the languages but "und".

    Hand-worked, exact_match en 0.8, sw 0.2: macro 0.5, worst 0.2 (sw), gap 0.6; code_switch en 0.1,
    sw 0.3 (lower is better): worst 0.3 (sw), gap 0.2.

    >>> agg, worst = aggregate({"en": {"exact_match": 0.8, "code_switch": 0.1},
    ...                         "sw": {"exact_match": 0.2, "code_switch": 0.3}},
    ...                        {"exact_match": "higher", "code_switch": "lower"})
    >>> {m: {k: round(v, 4) for k, v in s.items()} for m, s in agg.items()}
    {'exact_match': {'macro': 0.5, 'worst': 0.2, 'gap': 0.6}, 'code_switch': {'macro': 0.2, 'worst': 0.3, 'gap': 0.2}}
    >>> worst
    {'exact_match': 'sw', 'code_switch': 'sw'}
    """
    aggregates: dict[str, dict[str, float]] = {}
    worst_language: dict[str, str] = {}
    for metric, better in directions.items():
        values = {lang: scores[metric] for lang, scores in per_language.items()
                  if lang != UNDETERMINED and metric in scores}
        if not values:
            continue
        stats = {"macro": sum(values.values()) / len(values)}
        if better is not None:
            pick = min if better == "higher" else max
            worst_language[metric] = pick(values, key=values.__getitem__)
            stats["worst"] = values[worst_language[metric]]
        stats["gap"] = max(values.values()) - min(values.values())
        aggregates[metric] = stats
    return aggregates, worst_language


@dataclass
class EvalReport:
    """One evaluation of one model on per-language held-out sets."""

    per_language: dict[str, dict[str, float]]  # language -> metric -> value
    aggregates: dict[str, dict[str, float]]  # metric -> {"macro", "worst", "gap"}
    samples: list[dict]  # generations kept for the report (prompt, completion, answers, language, scores)
    not_measured: list[str]  # metrics that could not be measured here (never reported as 0)
    tokenizers: dict[str, str]  # language -> sacrebleu tokenizer used for BLEU
    seconds: float  # wall time of the evaluation
    notes: list[str] = field(default_factory=list)  # fallbacks and repairs, for people
    worst_language: dict[str, str] = field(default_factory=dict)  # metric -> its worst language
    rows: dict[str, int] = field(default_factory=dict)  # language -> rows evaluated
    directions: dict[str, str | None] = field(default_factory=dict)  # metric -> "higher"/"lower"/None
    settings: dict[str, Any] = field(default_factory=dict)  # how it was measured (max_new_tokens, ...)
    # Per-row scores, column-wise: {"id": [...], "language": [...], "<metric>": [score or None, ...]}: what
    # a comparison report bootstraps over (prompts paired across arms by id). Corpus-level metrics (chrF,
    # BLEU over a language's set) have no per-row score; their sentence-level rewards do.
    items: dict[str, list] = field(default_factory=dict)

    @classmethod
    def build(cls, per_language: dict[str, dict[str, float]], directions: dict[str, str | None],
              **fields: Any) -> EvalReport:
        """A report whose aggregates are computed from `per_language` and `directions`."""
        aggregates, worst = aggregate(per_language, directions)
        return cls(per_language=per_language, aggregates=aggregates, worst_language=worst,
                   directions=dict(directions), **fields)

    def flat(self, prefix: str = "eval") -> dict[str, float]:
        """{"<prefix>/<metric>/<lang>": v, "<prefix>/<metric>/macro": v, ...}, for logging."""
        out = {f"{prefix}/{metric}/{lang}": value
               for lang, scores in self.per_language.items() for metric, value in scores.items()}
        for metric, stats in self.aggregates.items():
            out.update({f"{prefix}/{metric}/{stat}": value for stat, value in stats.items()})
        return out

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str = "the report") -> EvalReport:
        """The report `to_json` wrote; a UserError naming `source` when `data` is not one."""
        required = ("per_language", "aggregates", "samples", "not_measured", "tokenizers", "seconds")
        missing = [key for key in required if not isinstance(data, Mapping) or key not in data]
        if missing:
            raise UserError(f"{source} is not an evaluation report (missing {', '.join(missing)}); give a JSON "
                            "file written by `mlgrpo eval`")
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})


def collapse_warnings(start: EvalReport, now: EvalReport, threshold: float = 0.1,
                      prefix: str = "eval") -> dict[str, float]:
    """Change since `start` of every score both reports have, and a collapse flag per language.

    `<prefix>/collapse/<lang>` is 1.0 when the language's language_consistency or exact_match fell by
    more than `threshold` (an absolute drop: both are shares in 0-1), else 0.0. Changes are
    `<prefix>/change/<metric>/<lang>` and `<prefix>/change/<metric>/{macro,worst,gap}`, now - start: under
    one prefix, with the language last like every other name, so that the MLflow UI puts one metric's
    changes in one section (as `<metric>/<lang>/change` each language's change was a section of its own).

    Hand-worked: sw consistency 0.9 -> 0.7 fell 0.2 > 0.1 -> collapse 1.0; en 0.9 -> 0.85 -> 0.0.

    >>> a = EvalReport.build({"en": {"language_consistency": 0.9}, "sw": {"language_consistency": 0.9}},
    ...                      {"language_consistency": "higher"}, samples=[], not_measured=[], tokenizers={}, seconds=0)
    >>> b = EvalReport.build({"en": {"language_consistency": 0.85}, "sw": {"language_consistency": 0.7}},
    ...                      {"language_consistency": "higher"}, samples=[], not_measured=[], tokenizers={}, seconds=0)
    >>> w = collapse_warnings(a, b)
    >>> w["eval/collapse/sw"], w["eval/collapse/en"], round(w["eval/change/language_consistency/sw"], 4)
    (1.0, 0.0, -0.2)
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
        raise UserError(f"collapse threshold must be a number between 0 and 1, got {threshold!r}")
    out: dict[str, float] = {}
    for lang, scores in now.per_language.items():
        before = start.per_language.get(lang, {})
        shared = [m for m in scores if m in before and math.isfinite(scores[m]) and math.isfinite(before[m])]
        out.update({f"{prefix}/change/{m}/{lang}": scores[m] - before[m] for m in shared})
        if lang == UNDETERMINED:
            continue
        fell = any(before[m] - scores[m] > threshold for m in COLLAPSE_METRICS if m in shared)
        out[f"{prefix}/collapse/{lang}"] = 1.0 if fell else 0.0
    for metric, stats in now.aggregates.items():
        before = start.aggregates.get(metric, {})
        out.update({f"{prefix}/change/{metric}/{s}": v - before[s] for s, v in stats.items() if s in before})
    return out


def paired_change(start: EvalReport, now: EvalReport, prefix: str = "eval", level: float = 0.95, n_boot: int = 2000,
                  seed: int = 0) -> dict[str, float]:
    """Change since `start` of every per-prompt score with a direction, paired by prompt (language and id), with a
    percentile bootstrap interval over the prompts: `<prefix>/change/<metric>/prompts_{mean,low,high,n}`.

    What RL changes is read off the same held-out prompts before and after: pairing removes the prompts' own
    difficulty from the interval. Prompts either report leaves unscored are left out. Pure; numpy only.

    Hand-worked: three prompts scored 0, 0, 1 at the start and 1, 0, 1 now -> differences 1, 0, 0, mean 1/3;
    every bootstrap mean is k/3 for k in 0..3, so the 95% interval lies within [0, 1].

    >>> a = EvalReport.build({"en": {}}, {"exact_match": "higher"}, samples=[], not_measured=[], tokenizers={},
    ...                      seconds=0, items={"id": ["1", "2", "3"], "language": ["en"] * 3, "exact_match": [0, 0, 1]})
    >>> b = EvalReport.build({"en": {}}, {"exact_match": "higher"}, samples=[], not_measured=[], tokenizers={},
    ...                      seconds=0, items={"id": ["1", "2", "3"], "language": ["en"] * 3, "exact_match": [1, 0, 1]})
    >>> c = paired_change(a, b)
    >>> round(c["eval/change/exact_match/prompts_mean"], 4), c["eval/change/exact_match/prompts_n"]
    (0.3333, 3.0)
    >>> 0 <= c["eval/change/exact_match/prompts_low"] <= c["eval/change/exact_match/prompts_high"] <= 1
    True
    """
    import numpy as np

    before, after = _scores_by_prompt(start.items), _scores_by_prompt(now.items)
    rng = np.random.default_rng(seed)
    out: dict[str, float] = {}
    for metric in after:
        if metric not in before or now.directions.get(metric) is None:
            continue
        shared = after[metric].keys() & before[metric].keys()
        d = np.array([after[metric][k] - before[metric][k] for k in sorted(shared)], dtype=float)
        if d.size == 0:
            continue
        means = d[rng.integers(0, d.size, (n_boot, d.size))].mean(axis=1)
        low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
        out.update({f"{prefix}/change/{metric}/prompts_mean": float(d.mean()),
                    f"{prefix}/change/{metric}/prompts_low": float(low),
                    f"{prefix}/change/{metric}/prompts_high": float(high),
                    f"{prefix}/change/{metric}/prompts_n": float(d.size)})
    return out


def _scores_by_prompt(items: Mapping[str, list]) -> dict[str, dict[tuple[str, str], float]]:
    """metric -> {(language, id): finite score} from EvalReport.items' columns."""
    keys = list(zip(items.get("language", []), items.get("id", [])))
    return {metric: {key: float(v) for key, v in zip(keys, values)
                     if v is not None and not isinstance(v, bool) and math.isfinite(v)}
            for metric, values in items.items() if metric not in ("id", "language")}
