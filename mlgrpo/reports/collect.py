"""A comparison as arrays: the runs MLflow holds, aligned by arm, seed, language, prompt and step.

    ExperimentRecord (tracking.reader) -> Comparison
        .scores(arm, metric, language)  (S, n) per-prompt scores of the last evaluation, rows = all seeds
        .curve(arm, key)                (steps, (S, T) values) of a logged metric, NaN where a seed lacks a step
        .warnings                       what a reader must know: runs in progress or failed, missing data

Seeds are the union over arms in one order, so arrays of two arms pair by (seed, prompt). Prompts are
matched by id across arms and seeds; a prompt one run did not evaluate is NaN there (not applicable).
Metrics with no per-prompt score (corpus chrF, BLEU) fall back to the logged per-language value of
each seed: an (S, 1) array, so their intervals cover seeds only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mlgrpo.tracking.names import DESCRIPTIVE, direction
from mlgrpo.tracking.reader import ExperimentRecord, RunRecord

ITEMS_FOLDER = "eval_items/"
SAMPLES_FOLDER = "samples/"
NOT_METRICS = ("id", "language")


@dataclass
class Comparison:
    name: str
    arms: list[str]
    seeds: list[str]
    languages: list[str]
    runs: dict[str, dict[str, RunRecord]]  # arm -> seed -> run
    parent: RunRecord | None
    uri: str
    warnings: list[str] = field(default_factory=list)

    def run_list(self) -> list[RunRecord]:
        return [run for arm in self.arms for run in self.runs[arm].values()]

    # ------------------------------------------------------------------ evaluation

    def items(self, run: RunRecord, last: bool = True) -> dict | None:
        """The per-prompt scores of the run's last (or first: step 0) evaluation, or None when it logged none."""
        paths = sorted(p for p in run.artifacts if p.startswith(ITEMS_FOLDER) and run.artifacts[p])
        return run.artifacts[paths[-1] if last else paths[0]] if paths else None

    def samples(self, run: RunRecord, last: bool = True) -> list[dict]:
        """Sample generations ({"id", "language", "prompt", "completion", "answers", scores...}) of the
        run's last (or first) evaluation."""
        paths = sorted(p for p in run.artifacts if p.startswith(SAMPLES_FOLDER) and run.artifacts[p])
        if not paths:
            return []
        table = run.artifacts[paths[-1] if last else paths[0]]
        if not isinstance(table, dict) or "columns" not in table:
            return []
        return [dict(zip(table["columns"], row)) for row in table.get("data", [])]

    def item_metrics(self) -> list[str]:
        """Per-prompt metrics with a better direction, in the order the runs logged them."""
        found: dict[str, None] = {}
        for run in self.run_list():
            items = self.items(run) or {}
            found.update({k: None for k in items if k not in NOT_METRICS and direction(k) != DESCRIPTIVE})
        return list(found)

    def eval_metrics(self) -> list[str]:
        """Every evaluation metric logged per language ("chrf", "reward/total", ...), direction known."""
        found: dict[str, None] = {}
        for run in self.run_list():
            for key in run.metrics:
                parts = key.split("/")
                if parts[0] == "eval" and len(parts) >= 3 and parts[-1] in self.languages:
                    name = "/".join(parts[1:-1])
                    if direction(name) != DESCRIPTIVE and name != "collapse" and not name.startswith("change/"):
                        found[name] = None
        return list(found)

    def scores(self, arm: str, metric: str, language: str, ids: list[str] | None = None) -> np.ndarray:
        """(S, n) scores of `arm` (rows: self.seeds; NaN for a seed the arm lacks). Per-prompt when the
        runs logged them, else (S, 1) of the logged per-language value."""
        ids = ids if ids is not None else self.item_ids(metric, language)
        if ids:
            out = np.full((len(self.seeds), len(ids)), math.nan)
            where = {item: j for j, item in enumerate(ids)}
            for i, seed in enumerate(self.seeds):
                run = self.runs[arm].get(seed)
                items = self.items(run) if run else None
                if not items or metric not in items:
                    continue
                for item, lang, value in zip(items["id"], items["language"], items[metric]):
                    if lang == language and item in where and value is not None and math.isfinite(value):
                        out[i, where[item]] = float(value)
            return out
        out = np.full((len(self.seeds), 1), math.nan)
        for i, seed in enumerate(self.seeds):
            run = self.runs[arm].get(seed)
            value = run.metrics.get(f"eval/{metric}/{language}") if run else None
            if value is not None and math.isfinite(value):
                out[i, 0] = value
        return out

    def item_ids(self, metric: str, language: str) -> list[str]:
        """Ids of the prompts of `language` that some run scored on `metric` (sorted), [] when none did."""
        ids: set[str] = set()
        for run in self.run_list():
            items = self.items(run)
            if items and metric in items:
                ids.update(i for i, lang in zip(items["id"], items["language"]) if lang == language)
        return sorted(ids)

    # ------------------------------------------------------------------ training curves

    def curve(self, arm: str, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values (S, T)) of metric `key` over this arm's seeds, on the union of their steps."""
        histories = {seed: dict(run.history.get(key, [])) for seed, run in self.runs[arm].items()}
        steps = np.array(sorted({s for h in histories.values() for s in h}), dtype=float)
        values = np.full((len(self.seeds), len(steps)), math.nan)
        for i, seed in enumerate(self.seeds):
            history = histories.get(seed, {})
            for j, step in enumerate(steps):
                if step in history:
                    values[i, j] = history[step]
        return steps, values

    def has_metric(self, key: str) -> bool:
        return any(key in run.history or key in run.metrics for run in self.run_list())


def comparison_from(record: ExperimentRecord) -> Comparison:
    """The record's runs as a Comparison, with warnings for everything that is not a finished run."""
    runs: dict[str, dict[str, RunRecord]] = {}
    for run in record.runs:
        runs.setdefault(run.arm, {})[run.seed] = run
    arms = _arm_order(record, runs)
    seeds = sorted({run.seed for run in record.runs}, key=lambda s: (not s.lstrip("-").isdigit(), int(s) if s.lstrip("-").isdigit() else 0, s))
    languages = sorted({lang for run in record.runs for lang in run.tags.get("languages", "").split(",") if lang})
    warnings = []
    for run in record.runs:
        if run.status == "RUNNING":
            last = max((s for h in run.history.values() for s, _ in h), default=0)
            warnings.append(f"{run.name} is still running (last logged step {last}): its latest evaluation is used")
        elif run.status != "FINISHED":
            warnings.append(f"{run.name} ended {run.status}: its latest evaluation is used")
    comparison = Comparison(record.name, arms, seeds, languages, {a: runs.get(a, {}) for a in arms}, record.parent,
                            record.uri, warnings)
    for run in record.runs:
        if comparison.items(run) is None:
            warnings.append(f"{run.name} logged no per-prompt scores: its intervals cover seeds only")
    for arm in arms:
        missing = [s for s in seeds if s not in comparison.runs[arm]]
        if missing:
            warnings.append(f"arm {arm} has no run for seed(s) {', '.join(missing)}")
    if record.superseded:
        warnings.append(f"older runs of the same arm and seed are left out: {', '.join(record.superseded)}")
    return comparison


def _arm_order(record: ExperimentRecord, runs: dict) -> list[str]:
    """The experiment file's order (the parent run's "arms" param), then any other arm by name."""
    declared = record.parent.params.get("arms", "").split(",") if record.parent else []
    order = [a for a in declared if a in runs]
    return order + sorted(a for a in runs if a not in order)
