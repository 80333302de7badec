"""From reward configuration to TRL-ready reward functions and weights, and the pre-flight check that
the data has the columns the rewards need.

Each built function is `guard(per_language(bound(registered function, params)))`, named after the
spec's label so that TRL logs rewards/<label>/mean; the weights go to GRPOConfig.reward_weights.
Knows nothing about trainers, advantages or MLflow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.rewards.config import RewardConfig, RewardSpec, check_distinct_names
from mlgrpo.rewards.guard import GuardedReward, RewardGuard
from mlgrpo.rewards.registry import RewardEntry, get_reward
from mlgrpo.rewards.texts import has_value
from mlgrpo.rewards.transform import PerLanguage


class BoundReward:
    """A registered reward with its parameters fixed; same TRL signature.

    A dataset column named like a parameter is an error rather than a silent override: with
    functools.partial the column, passed at call time, would win.
    """

    def __init__(self, entry: RewardEntry, params: Mapping[str, Any], name: str):
        self.entry, self.params, self.__name__ = entry, dict(params), name

    def __call__(self, prompts: Sequence | None = None, completions: Sequence | None = None, **columns: Any) -> list:
        clash = sorted(self.params.keys() & columns.keys())
        if clash:
            raise ValueError(f"dataset column(s) {clash} share a name with parameter(s) of reward "
                             f"{self.__name__!r}; rename the column(s)")
        return self.entry.func(prompts=prompts, completions=completions, **columns, **self.params)


def build_reward_functions(specs: RewardConfig | Sequence[RewardSpec],
                           guard: RewardGuard | None = None) -> tuple[list[GuardedReward], list[float]]:
    """TRL reward functions and their weights, in the order of `specs`.

    Every parameter check runs here (a bad regex, a missing model directory), so that a bad
    configuration fails before training. All functions share `guard` (default: a new one with the
    config's on_bad_reward, "zero" for a bare list); read its counts via `funcs[i].guard`.
    """
    if isinstance(specs, RewardConfig):
        guard = guard or RewardGuard(specs.on_bad_reward)
        specs = specs.rewards
    guard = guard or RewardGuard()
    check_distinct_names(specs)
    funcs: list[GuardedReward] = []
    for spec in specs:
        entry = get_reward(spec.name)
        if entry.check is not None:
            entry.check(spec.params)
        func: Any = BoundReward(entry, spec.params, spec.display_name)
        if spec.per_language:
            func = PerLanguage(func, spec.per_language, spec.display_name)
        funcs.append(guard.wrap(func, spec.display_name))
    return funcs, [float(spec.weight) for spec in specs]


def weighted_total(rewards_per_func: Sequence[Sequence[float | None]], weights: Sequence[float]) -> list[float | None]:
    """Each completion's total reward as TRL computes it: the weighted sum over the functions that
    apply (None is skipped, TRL's nansum), and None when none applies (TRL's "unscorable" row).
    For scoring outside the trainer (evaluation, reports) with the trainer's arithmetic.

    Hand-worked, weights (1, 0.5): (1.0, -0.2) -> 1.0 - 0.1 = 0.9; (None, -0.2) -> -0.1; (None, None) -> None.

    >>> [None if t is None else round(t, 4) for t in weighted_total([[1.0, None, None], [-0.2, -0.2, None]], [1, 0.5])]
    [0.9, -0.1, None]
    """
    if len(rewards_per_func) != len(weights):
        raise ValueError(f"{len(rewards_per_func)} reward lists for {len(weights)} weights")
    totals: list[float | None] = []
    for row in zip(*rewards_per_func, strict=True):
        applied = [w * r for r, w in zip(row, weights) if r is not None]
        totals.append(sum(applied) if applied else None)
    return totals


@dataclass(frozen=True)
class MissingColumn:
    """Rows that lack a column a reward needs."""

    reward: str  # the spec's display name
    requirement: str  # "reference", or "answers|reference" for either
    rows_missing: int
    rows_total: int
    first_row: str  # the first such row's id (or its 0-based index when it has none)

    def __str__(self) -> str:
        needs = " or ".join(repr(c) for c in self.requirement.split("|"))
        return (f"reward {self.reward!r} needs {needs}, missing in {self.rows_missing} of {self.rows_total} rows "
                f"(first: {self.first_row})")


def missing_columns(specs: Sequence[RewardSpec], records: Iterable[Mapping[str, Any]]) -> list[MissingColumn]:
    """Every (reward, requirement) some row cannot satisfy; a value counts when `has_value` says so."""
    needs = [(spec.display_name, req) for spec in specs for req in spec.requires]
    missing = {need: 0 for need in needs}
    first: dict[tuple[str, str], str] = {}
    total = 0
    for index, record in enumerate(records):
        total += 1
        for need in needs:
            if not any(has_value(record.get(col)) for col in need[1].split("|")):
                missing[need] += 1
                first.setdefault(need, repr(record.get("id", index)))
    return [MissingColumn(reward, req, missing[reward, req], total, first[reward, req])
            for reward, req in needs if missing[reward, req]]


def check_requirements(specs: RewardConfig | Sequence[RewardSpec], records: Iterable[Mapping[str, Any]], *,
                       allow_partial: bool = False, source: str = "the data") -> list[MissingColumn]:
    """Fail before training when the data cannot feed the rewards.

    Raises UserError when a reward's column is missing in every row, or in any row unless
    `allow_partial` (then those rows get None from that reward, "not applicable"). Returns the
    partial gaps it allowed, for the caller to report.
    """
    if isinstance(specs, RewardConfig):
        specs = specs.rewards
    gaps = missing_columns(specs, records)
    fatal = [g for g in gaps if g.rows_missing == g.rows_total or not allow_partial]
    if fatal:
        if any(g.rows_missing == g.rows_total for g in fatal):
            hint = "remove the reward or use data that has the column"
        else:
            hint = "fill the column, or allow partial columns (those rows then get None from the reward)"
        raise UserError(f"{source}: " + "; ".join(str(g) for g in fatal) + f"; {hint}")
    return gaps
