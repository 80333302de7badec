"""Fit the memory model's three constants (mlgrpo/trainers/memory.py) to measured peaks, and say how well it fits.

    measured peak - exact terms = base + activation x (graphs x layers x hidden x tokens)
                                  + logit_copies x (4 bytes x micro-batch x completion tokens x vocab)

solved by non-negative least squares on relative residuals (each point divided by its measurement, so a
0.6M model's 700 MB counts as much as gemma's 10 GB), by trying every subset of the three constants
(2^3 unconstrained solves): exact for three unknowns. The error is reported on the points themselves and
with each model size left out of the fit and predicted by the others.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass

import numpy as np

from mlgrpo.models.shape import Counts
from mlgrpo.trainers.memory import LOGIT_BYTES, Coefficients, Fit, Workload, estimate, terms

ZERO = Coefficients(base=0.0, activation=0.0, logit_copies=0.0)


@dataclass(frozen=True)
class Point:
    size: str
    arm: str
    shape: Counts
    work: Workload
    measured: float  # bytes


def point_inputs(rows: list[dict]) -> list[Point]:
    """The measured CPU points of bench_scale as the memory model's inputs."""
    points = []
    for r in rows:
        if r.get("device") != "cpu":
            continue
        work = Workload(algorithm=r["algorithm"], critic=r["critic"], weight_bytes=r["weight_bytes"], rollout=r["rollout"],
                        micro_batch=r["micro_batch"], prompt_tokens=r["prompt_tokens"],
                        completion_tokens=r["completion_tokens"])
        points.append(Point(r["size"], r["arm"], Counts(**r["shape"]), work, float(r["peak_bytes"])))
    return points


def features(point: Point) -> list[float]:
    """The multipliers of (base, activation, logit_copies) for one point."""
    s, w = point.shape, point.work
    graphs = 2 if w.algorithm == "ppo" else 1
    tokens = w.micro_batch * (w.prompt_tokens + w.completion_tokens)
    return [1.0, graphs * s.layers * s.hidden * tokens, LOGIT_BYTES * w.micro_batch * w.completion_tokens * s.vocab]


def solve(points: list[Point]) -> Coefficients:
    a = np.array([features(p) for p in points]) / np.array([[p.measured] for p in points])
    b = np.array([(p.measured - estimate(p.shape, p.work, ZERO)) / p.measured for p in points])
    best, best_cost = np.zeros(3), float(np.sum(b**2))
    for k in range(1, 4):
        for subset in itertools.combinations(range(3), k):
            x, *_ = np.linalg.lstsq(a[:, subset], b, rcond=None)
            if np.any(x < 0):
                continue
            full = np.zeros(3)
            full[list(subset)] = x
            cost = float(np.sum((a @ full - b) ** 2))
            if cost < best_cost:
                best, best_cost = full, cost
    return Coefficients(base=float(best[0]), activation=float(best[1]), logit_copies=float(best[2]))


def relative_errors(points: list[Point], coef: Coefficients) -> list[float]:
    return [abs(estimate(p.shape, p.work, coef) - p.measured) / p.measured for p in points]


def fit_memory(points: list[Point], *, command: str, day: str) -> Fit:
    coef = solve(points)
    errors = relative_errors(points, coef)
    held_out = {}
    for size in dict.fromkeys(p.size for p in points):
        rest = [p for p in points if p.size != size]
        if rest:
            held_out[size] = max(relative_errors([p for p in points if p.size == size], solve(rest)))
    return Fit(cpu=coef, points=len(points), median_error=statistics.median(errors), max_error=max(errors),
               cross_validated=held_out, command=command, date=day)


def breakdown(point: Point, coef: Coefficients) -> dict[str, float]:
    return terms(point.shape, point.work, coef)
