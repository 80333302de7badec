"""The registry of reward functions: one name, one plain function, the columns it needs.

A reward function has TRL's signature, `f(prompts, completions, **columns) -> list[float | None]`,
where None means "does not apply to this row". Its keyword-only arguments that are not columns are
its parameters (set from config, bound by the builder). Each entry declares the dataset columns it
requires, so that a reward needing references can be rejected before training on data without them.
Knows nothing about trainers, advantages or MLflow.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mlgrpo.registry import Registry, did_you_mean

RewardFunc = Callable[..., list]
REQUIRED = inspect.Parameter.empty  # marks a parameter the config must set

# What TRL itself passes besides the dataset columns; never a parameter, never a column.
TRL_ARGUMENTS = frozenset({"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
                           "environments"})


@dataclass(frozen=True)
class RewardEntry:
    """A registered reward function and what it needs.

    requires: columns every scored row must have; "answers|reference" means either one will do.
    optional: columns read when present (e.g. `language` to pick a normalisation).
    check: validates the parameters at build time (a bad regex, a missing model directory) and
        raises UserError, so a run fails before its first step, not in the middle.
    """

    name: str
    func: RewardFunc
    requires: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    check: Callable[[Mapping[str, Any]], None] | None = None

    @property
    def columns(self) -> frozenset[str]:
        names = {col for req in self.requires for col in req.split("|")}
        return frozenset(names | set(self.optional))

    @property
    def params(self) -> dict[str, Any]:
        """Parameter name -> default (REQUIRED when the config must give it)."""
        sig = inspect.signature(self.func)
        return {
            p.name: p.default
            for p in sig.parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in self.columns | TRL_ARGUMENTS
        }


REWARDS: Registry[RewardEntry] = Registry("reward")


def register(name: str, *, requires: tuple[str, ...] = (), optional: tuple[str, ...] = (),
             check: Callable[[Mapping[str, Any]], None] | None = None) -> Callable[[RewardFunc], RewardFunc]:
    """Decorator: add a reward function to the registry under `name` (duplicates are a bug)."""

    def add(func: RewardFunc) -> RewardFunc:
        REWARDS.add(name, RewardEntry(name, func, tuple(requires), tuple(optional), check))
        return func

    return add


def closest(word: str, choices) -> str:
    """" (did you mean 'x'?)" for the closest of `choices` (mlgrpo.registry's rule), or "" when none is close."""
    match = did_you_mean(word, choices)
    return f" (did you mean {match!r}?)" if match else ""


def get_reward(name: str) -> RewardEntry:
    """The entry registered as `name`; a UserError naming the closest valid name otherwise."""
    return REWARDS.get(name)


def reward_names() -> list[str]:
    return list(REWARDS.names())
