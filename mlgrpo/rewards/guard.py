"""The guard between reward functions and the trainer: bad rewards are counted, logged, and then
zeroed or fatal, never passed on silently.

TRL turns a reward of None into NaN and sums rewards with `nansum`, so a NaN from a broken function
looks exactly like "not applicable", and an inf turns its whole group's advantages into NaN, which
TRL then zeroes: either way the run goes on learning nothing from those rows, and nothing says so.
Bad kinds, counted per reward function:

    nan     a NaN value                    inf     +inf or -inf
    type    a value that is not a number   length  a list of the wrong length (whole batch)
    error   the function raised (whole batch)

`on_bad_reward="zero"` scores each bad value 0.0 (a whole bad batch: every row) and logs a warning
on the 1st, 10th, 100th... occurrence of each kind; "fail" raises BadRewardError naming the function,
the kind and the first offending completion.

None is not bad: it is TRL's "this reward does not apply to this row" (a row without a reference),
and it is passed on as is. It is counted as "none" so that a reward that never applies shows up in
the logs; a row for which every reward is None is unscorable and TRL gives it zero advantage.
Knows nothing about trainers, advantages or MLflow: the trainer reads `counts()`/`metrics()`.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.rewards.texts import as_text

log = logging.getLogger(__name__)

ON_BAD_REWARD = ("zero", "fail")
BAD_KINDS = ("nan", "inf", "type", "length", "error")
SNIPPET_CHARS = 80


class BadRewardError(UserError):
    """A reward function produced a bad reward and the run is configured to stop (on_bad_reward="fail")."""


def snippet(completion: Any) -> str:
    """The completion as text, cut to SNIPPET_CHARS characters for a one-line message."""
    text = as_text(completion)
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + "…"


def value_kind(value: Any) -> str | None:
    """The bad kind of one reward value, "none" for None, or None for a good number.

    >>> [value_kind(v) for v in (0.5, True, None, float("nan"), float("-inf"), "1.0")]
    [None, None, 'none', 'nan', 'inf', 'type']
    """
    if value is None:
        return "none"
    if not isinstance(value, numbers.Real):
        return "type"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    return None


def _power_of_ten_crossed(before: int, after: int) -> bool:
    """True when a count went from `before` to `after` through 1, 10, 100, ... (when to warn again)."""
    return after > 0 and (before == 0 or len(str(after)) > len(str(before)))


class RewardGuard:
    """Checks every output of the reward functions it wraps; one guard per run, shared by all of them."""

    def __init__(self, on_bad_reward: str = "zero"):
        if on_bad_reward not in ON_BAD_REWARD:
            raise UserError(f"on_bad_reward must be one of {', '.join(ON_BAD_REWARD)}, got {on_bad_reward!r}")
        self.on_bad_reward = on_bad_reward
        self._counts: dict[str, Counter] = {}
        self._lifetime: Counter = Counter()  # (function, kind) -> count since creation, for log throttling

    def wrap(self, func: Callable[..., Any], name: str) -> GuardedReward:
        """`func` behind this guard, as a TRL reward function whose `__name__` is `name`."""
        return GuardedReward(func, name, self)

    def counts(self) -> dict[str, dict[str, int]]:
        """{function: {"values": n, "none": n, <bad kind>: n, ...}} since the last reset."""
        return {name: dict(c) for name, c in self._counts.items()}

    def metrics(self, prefix: str = "reward_guard") -> dict[str, int]:
        """The counts flattened as {"<prefix>/<function>/<kind>": n}, ready for a metrics logger."""
        return {f"{prefix}/{name}/{kind}": n for name, c in self._counts.items() for kind, n in sorted(c.items())}

    def reset(self) -> None:
        self._counts.clear()

    def call(self, name: str, func: Callable[..., Any], prompts: Sequence, completions: Sequence,
             columns: Mapping[str, Any]) -> list[float | None]:
        """Run `func` as TRL would and return its checked rewards (see the module docstring)."""
        counts = self._counts.setdefault(name, Counter())
        n = len(completions)
        try:
            output = func(prompts=prompts, completions=completions, **columns)
        except Exception as exc:
            what = f"raised {type(exc).__name__}: {exc}"
            return self._bad_batch(name, "error", what, completions, n, cause=exc)
        if isinstance(output, (str, bytes, Mapping)) or not hasattr(output, "__len__"):
            return self._bad_batch(name, "type", f"returned a {type(output).__name__}, not a list", completions, n)
        if len(output) != n:
            return self._bad_batch(name, "length", f"returned {len(output)} rewards for {n} completions",
                                   completions, n)
        return self._check_values(name, list(output), completions, counts)

    def _check_values(self, name: str, output: list, completions: Sequence, counts: Counter) -> list[float | None]:
        counts["values"] += len(output)
        checked: list[float | None] = []
        first: dict[str, int] = {}
        for i, value in enumerate(output):
            kind = value_kind(value)
            if kind is None:
                checked.append(float(value))
                continue
            counts[kind] += 1
            if kind == "none":
                checked.append(None)
                continue
            first.setdefault(kind, i)
            checked.append(0.0)
        for kind, i in first.items():
            what = f"returned {output[i]!r}" if kind != "type" else f"returned a {type(output[i]).__name__}"
            self._report(name, kind, f"{what} for completion {i} of {len(output)}: {snippet(completions[i])!r}",
                         sum(value_kind(v) == kind for v in output))
        return checked

    def _bad_batch(self, name: str, kind: str, what: str, completions: Sequence, n: int,
                   cause: BaseException | None = None) -> list[float]:
        self._counts.setdefault(name, Counter())[kind] += 1
        first = f"; first completion: {snippet(completions[0])!r}" if n else ""
        self._report(name, kind, f"{what} (batch of {n}){first}", 1, cause)
        return [0.0] * n

    def _report(self, name: str, kind: str, what: str, new: int, cause: BaseException | None = None) -> None:
        message = f"reward function {name!r}: {kind}: {what}"
        if self.on_bad_reward == "fail":
            raise BadRewardError(f"{message}; stopping (on_bad_reward='fail'; 'zero' scores such rewards 0.0 "
                                 "and goes on)") from cause
        before = self._lifetime[name, kind]
        self._lifetime[name, kind] += new
        if _power_of_ten_crossed(before, before + new):
            log.warning("%s; scored 0.0 instead (on_bad_reward='zero'; %d so far)", message, before + new,
                        exc_info=cause)


class GuardedReward:
    """A TRL reward function: calls `func` through `guard`. TRL logs it as rewards/<__name__>/mean."""

    def __init__(self, func: Callable[..., Any], name: str, guard: RewardGuard):
        self.func, self.__name__, self.guard = func, name, guard

    def __call__(self, prompts: Sequence | None = None, completions: Sequence | None = None,
                 **columns: Any) -> list[float | None]:
        return self.guard.call(self.__name__, self.func, prompts, completions or [], columns)

    def __repr__(self) -> str:
        return f"GuardedReward({self.__name__!r}, on_bad_reward={self.guard.on_bad_reward!r})"
