"""Per-language affine transforms of a reward: r -> scale * r + offset, chosen by the row's language.

This reproduces a reward model whose scale differs by language (say, Swahili rewards squashed to a
fifth and shifted down), the failure mode that group-relative advantages are meant to survive: within
a prompt's group every completion shares one language, so a per-language affine map leaves the
group-normalised advantages of that reward unchanged (for a positive scale, up to the eps added to
the standard deviation), while a batch-level baseline or a sum with other rewards is biased by it.
Knows nothing about trainers, advantages or MLflow.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlgrpo.rewards.texts import base_language


@dataclass(frozen=True)
class LanguageAffine:
    """r -> scale * r + offset for the rows of one language."""

    scale: float = 1.0
    offset: float = 0.0

    def __post_init__(self) -> None:
        for name in ("scale", "offset"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")


def transform_by_language(rewards: Sequence, languages: Sequence, table: Mapping[str, LanguageAffine]) -> list:
    """Apply each row's language transform; rows of other languages, None and non-numbers pass as is
    (a non-number is the guard's business, not this function's).

    Hand-worked with sw: scale 0.2, offset -0.5: 1.0 -> 0.2 - 0.5 = -0.3; 0.0 -> -0.5; None stays;
    the "de" row has no transform and keeps 1.0.

    >>> table = {"sw": LanguageAffine(scale=0.2, offset=-0.5)}
    >>> [None if r is None else round(r, 4)
    ...  for r in transform_by_language([1.0, 0.0, None, 1.0], ["sw", "sw-KE", "sw", "de"], table)]
    [-0.3, -0.5, None, 1.0]
    """
    out = []
    for reward, language in zip(rewards, languages, strict=True):
        affine = table.get(base_language(language) or "")
        if affine is None or isinstance(reward, bool) or not isinstance(reward, numbers.Real):
            out.append(reward)
        else:
            out.append(affine.scale * float(reward) + affine.offset)
    return out


class PerLanguage:
    """A reward function whose outputs go through `transform_by_language`; same TRL signature.

    Reads the `language` column; a dataset without one is an error (the builder reports it before
    training). An output of the wrong length is passed on untouched for the guard to report.
    """

    def __init__(self, func: Callable[..., list], table: Mapping[str, LanguageAffine], name: str):
        self.func, self.table, self.__name__ = func, dict(table), name

    def __call__(self, prompts: Sequence | None = None, completions: Sequence | None = None, **columns: Any) -> list:
        rewards = self.func(prompts=prompts, completions=completions, **columns)
        if columns.get("language") is None:
            raise ValueError(f"per-language transform of {self.__name__!r} needs a 'language' column, "
                             "and the data has none")
        if rewards is None or not hasattr(rewards, "__len__") or len(rewards) != len(completions or ()):
            return rewards
        return transform_by_language(list(rewards), columns["language"], self.table)
