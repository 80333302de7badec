"""Fit the memory model's four constants (mlgrpo/trainers/memory.py) to measured peaks, and say how well it fits.

    measured peak - exact terms = base + per_vocab x vocab + activation x (graphs x layers x hidden x tokens)
                                  + largest_copies x (largest tensor x its bytes over the fully trained models)

solved by non-negative least squares on relative residuals (each point divided by its measurement, so a
0.6M model's 700 MB counts as much as gemma's 10 GB), by trying every subset of the constants (15
unconstrained solves): exact for four unknowns. The error is reported on the points themselves and with
each model size left out of the fit and predicted by the others.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass

import numpy as np

from mlgrpo.models.shape import Counts
from mlgrpo.trainers.memory import Coefficients, Fit, Workload, estimate, largest_bytes, terms

ZERO = Coefficients(base=0.0, per_vocab=0.0, activation=0.0, largest_copies=0.0)
NAMES = ("base", "per_vocab", "activation", "largest_copies")


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
    """The multipliers of the constants (NAMES order) for one point."""
    s, w = point.shape, point.work
    graphs = 2 if w.algorithm == "ppo" else 1
    tokens = w.micro_batch * (w.prompt_tokens + w.completion_tokens)
    return [1.0, float(s.vocab), graphs * s.layers * s.hidden * tokens, s.largest * largest_bytes(s, w)]


def solve(points: list[Point]) -> Coefficients:
    a = np.array([features(p) for p in points]) / np.array([[p.measured] for p in points])
    b = np.array([(p.measured - estimate(p.shape, p.work, ZERO)) / p.measured for p in points])
    k = len(NAMES)
    best, best_cost = np.zeros(k), float(np.sum(b**2))
    for size in range(1, k + 1):
        for subset in itertools.combinations(range(k), size):
            x, *_ = np.linalg.lstsq(a[:, subset], b, rcond=None)
            if np.any(x < 0):
                continue
            full = np.zeros(k)
            full[list(subset)] = x
            cost = float(np.sum((a @ full - b) ** 2))
            if cost < best_cost:
                best, best_cost = full, cost
    return Coefficients(**{name: float(value) for name, value in zip(NAMES, best)})


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
