"""Random-reward controls: an arm trained on rewards that carry no information about its completions, to
tell learning from drift (issue 26).

"Spurious Rewards" (Shao et al., arXiv 2506.10947) lifted Qwen2.5-Math with random rewards: a gain that a
control arm also shows is not evidence that the reward taught anything. Two controls keep the real reward's
scale and sparsity, so that only the link between a completion and its reward is broken:

    shuffle  each generation batch's rewards permuted among its completions (one permutation per batch, the
             same for every reward function, so a completion keeps a real completion's whole reward vector)
    random   each completion's reward drawn anew: non-zero with the batch's firing rate (the share of
             non-zero values), then one of the batch's non-zero values at random; 0 otherwise

Rows where a reward does not apply (None) stay None in place. Both are seeded (the run's seed), so a rerun
draws the same. Evaluation always scores the real rewards: the control changes training only.
Knows nothing about trainers or MLflow; pure Python.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

CONTROLS = ("none", "shuffle", "random")


class RewardControl:
    """The state the reward functions of one run share: the seeded generator and the batch's permutation."""

    def __init__(self, mode: str, seed: int):
        if mode not in CONTROLS:
            raise ValueError(f"reward control must be one of {', '.join(CONTROLS)}, got {mode!r}")
        self.mode, self.rng, self.order = mode, random.Random(seed), None

    def wrap(self, funcs: Sequence[Callable[..., list]]) -> list[Callable[..., list]]:
        """The functions TRL calls (in order, once per batch each): the first draws the batch's permutation."""
        if self.mode == "none":
            return list(funcs)
        return [ControlledReward(func, self, first=i == 0) for i, func in enumerate(funcs)]

    def apply(self, values: list, first: bool) -> list:
        """`values` of one function for one batch, with the link to their completions broken.

        >>> c = RewardControl("shuffle", seed=0)
        >>> sorted(c.apply([1.0, 0.0, 0.5, None], first=True), key=str)  # the same values, None kept in place
        [0.0, 0.5, 1.0, None]
        >>> c.apply([1.0, 2.0, 3.0, None], first=False)[3] is None
        True
        """
        scored = [i for i, v in enumerate(values) if v is not None]
        if self.mode == "shuffle":
            if first or self.order is None or len(self.order) != len(scored):
                self.order = self.rng.sample(range(len(scored)), len(scored))
            source = [values[scored[j]] for j in self.order]
        else:
            fired = [values[i] for i in scored if values[i] != 0]
            rate = len(fired) / len(scored) if scored else 0.0
            source = [self.rng.choice(fired) if fired and self.rng.random() < rate else 0.0 for _ in scored]
        out = list(values)
        for i, value in zip(scored, source, strict=True):
            out[i] = value
        return out


class ControlledReward:
    """A TRL reward function whose values go through a RewardControl; keeps the wrapped function's name (TRL logs
    rewards/<name>/mean) and its guard."""

    def __init__(self, func: Callable[..., list], control: RewardControl, first: bool):
        self.func, self.control, self.first = func, control, first
        self.__name__ = getattr(func, "__name__", type(func).__name__)
        self.guard = getattr(func, "guard", None)

    def __call__(self, *args: Any, **kwargs: Any) -> list:
        return self.control.apply(list(self.func(*args, **kwargs)), self.first)

    def __repr__(self) -> str:
        return f"ControlledReward({self.__name__!r}, control={self.control.mode!r})"
