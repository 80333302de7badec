"""How the comparison report reads results: the experiment file's `report:` section.

    report:
      min_seeds: 6                              # seeds per arm for a claim about the algorithm
      min_effect: {exact_match: 0.05, chrf: 2}  # smallest difference of interest, per metric

Never a difference between arms (it changes no run), so it is no part of a run's configuration or
hash; `mlgrpo run` logs it in the parent run's experiment.resolved.yaml and `mlgrpo report` reads it
from there (or from the experiment file, when given one, so that a changed threshold needs no re-run).
Pure: a frozen dataclass and its defaults; imports nothing heavy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from mlgrpo.errors import UserError

ALPHA = 0.05  # every test of the report, and 95% intervals


def fewest_seeds_for(alpha: float = ALPHA) -> int:
    """The fewest paired seeds with which a two-sided sign-flip test over seeds can give p < alpha.

    Its smallest p is 2 / 2**S (all differences of one sign): 0.0625 with 5 seeds, 0.031 with 6.

    >>> fewest_seeds_for(0.05), fewest_seeds_for(0.01)
    (6, 8)
    """
    seeds = 1
    while 2.0 / 2**seeds >= alpha:
        seeds += 1
    return seeds


MIN_SEEDS = fewest_seeds_for()

# Smallest effects of interest, in each metric's own units (first matching pattern wins). Shares in 0-1
# (exact match, pass@k, language consistency, rewards in 0-1): 0.02, one held-out prompt in 50, the
# quickstart's evaluation size per language, below which a difference is one prompt's luck. chrF and BLEU
# (0-100): 1 point, below which corpus-level differences are rarely confirmed by people (Kocmi et al.,
# "To Ship or Not to Ship", WMT 2021). Other metrics have none: every significant difference counts.
DEFAULT_MIN_EFFECT: tuple[tuple[str, float], ...] = (
    ("exact_match", 0.02), ("pass_at_*", 0.02), ("language_consistency", 0.02), ("reward/*", 0.02),
    ("chrf", 1.0), ("bleu", 1.0),
)


@dataclass(frozen=True)
class ReportConfig:
    """How the comparison report tests and words differences between arms."""

    # Seeds per arm below which a difference holds for these trained models (the seeds run) and not yet
    # for the algorithm: 6, the fewest with which a test over seeds can reach p < 0.05 at all (its
    # smallest p is 2 / 2**seeds). Metrics with one value per seed are untestable below it.
    min_seeds: int = MIN_SEEDS
    # Smallest difference of interest per metric name ("exact_match", "chrf", "reward/total"), in the
    # metric's units; a difference smaller than it is "negligible" whatever its p. Unnamed metrics keep
    # the defaults (DEFAULT_MIN_EFFECT).
    min_effect: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.min_seeds, bool) or not isinstance(self.min_seeds, int) or self.min_seeds < 2:
            raise UserError(f"min_seeds: must be a whole number >= 2, got {self.min_seeds!r}")
        for metric, value in self.min_effect.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise UserError(f"min_effect: {metric}: must be a number >= 0 (in the metric's own units), "
                                f"got {value!r}")

    def smallest_effect(self, metric: str) -> float:
        """The smallest effect of interest of `metric` (0.0: none)."""
        if metric in self.min_effect:
            return float(self.min_effect[metric])
        return next((value for pattern, value in DEFAULT_MIN_EFFECT if fnmatchcase(metric, pattern)), 0.0)


def from_resolved(text: str | None) -> tuple[ReportConfig, str | None]:
    """(settings, warning) from the `report:` section of an experiment.resolved.yaml text; defaults when the
    text or the section is absent (runs logged before the section existed), with a warning when it is bad."""
    import yaml

    if not text:
        return ReportConfig(), None
    try:
        section = (yaml.safe_load(text) or {}).get("report") or {}
        return ReportConfig(min_seeds=int(section.get("min_seeds", MIN_SEEDS)),
                            min_effect=dict(section.get("min_effect") or {})), None
    except (yaml.YAMLError, AttributeError, TypeError, ValueError, UserError) as exc:
        return ReportConfig(), f"the logged report settings could not be read ({exc}); the defaults are used"
