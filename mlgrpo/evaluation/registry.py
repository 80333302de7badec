"""The registry of text metrics: one name, one pure function over (predictions, records).

Two shapes of function, both pure:

    per row     f(predictions, records) -> list[float | None]   one score per row, None where it does
                                                                not apply (no reference, no letters);
                                                                a language's score is the mean of its rows
    per corpus  f(predictions, records) -> dict[str, float]     one score per language, computed over
                                                                the language's rows at once (BLEU, chrF)

`predictions` are clean strings (see mlgrpo.evaluation.inputs) aligned with `records`
(mlgrpo.data.records). The harness looks a metric up by name; it never branches on which one it has.
Knows nothing about models, generation or MLflow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlgrpo.registry import Registry

BETTER = ("higher", "lower", None)


@dataclass(frozen=True)
class Metric:
    name: str
    func: Callable[[list[str], list[dict]], list | dict]
    per_row: bool  # True: a score per row (averaged per language); False: a score per language
    better: str | None  # "higher", "lower", or None when neither is better (length)
    scale: str  # "0-1" (a share), "0-100" (sacrebleu's convention), or a unit ("characters")
    requires: str | None  # the record field it needs: "answers|reference", "language", or None


METRICS: Registry[Metric] = Registry("metric")


def register(name: str, *, per_row: bool, better: str | None, scale: str, requires: str | None = None):
    """Decorator: add a metric function to the registry under `name` (a duplicate is a bug)."""
    if better not in BETTER:
        raise ValueError(f"metric {name!r}: better must be one of {BETTER}, got {better!r}")

    def add(func: Callable) -> Callable:
        METRICS.add(name, Metric(name, func, per_row, better, scale, requires))
        return func

    return add


def get_metric(name: str) -> Metric:
    """The metric registered as `name`; a UserError naming the closest valid name otherwise."""
    return METRICS.get(name)


def metric_names() -> list[str]:
    """Registered metric names, in registration order (the order reports list them)."""
    return list(METRICS)
