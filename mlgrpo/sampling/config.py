"""The sampler's configuration: one typed record, checked when it is made.

Only checks that need no data live here; checks against the dataset (a language named in `oversample`
that has no rows) happen where the rows are known, in `weights.target_shares`.
Knows nothing about datasets, models or MLflow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mlgrpo.errors import UserError


@dataclass(frozen=True)
class SamplerConfig:
    """How prompts are drawn for rollouts. YAML keys map 1:1 onto these fields.

    name                  language weighting, a key of `weights.WEIGHTS`: "uniform" (share n_l / N),
                          "balanced" (1 / L), "temperature" (n_l ** alpha, normalised), "oversample"
    alpha                 exponent of "temperature"; 1 is uniform over rows, toward 0 is balanced.
                          mT5 (Xue et al. 2021) and XLM-R (Conneau et al. 2020) used 0.3
    oversample            {language: factor} for "oversample": that language's rows weigh `factor` times
    max_repeats_per_item  at most this many expected draws of one row per epoch (None: no cap); the share
                          a cap takes from a language goes to the languages below their cap
    seed                  the same seed gives the same global order on every rank
    reward_buckets        0: off. k >= 1: within each language, draw evenly from k quantile buckets of
                          the mean reward each prompt earned so far, plus one bucket of unseen prompts
    prompts_per_epoch     prompts drawn per epoch (each repeated G times); None: one per dataset row
    """

    name: str = "uniform"
    alpha: float = 0.3
    oversample: dict[str, float] = field(default_factory=dict)
    max_repeats_per_item: float | None = None
    seed: int = 0
    reward_buckets: int = 0
    prompts_per_epoch: int | None = None

    def __post_init__(self) -> None:
        from mlgrpo.sampling.weights import WEIGHTS

        if self.name not in WEIGHTS:
            raise UserError(f"sampler name: {WEIGHTS.unknown_message(self.name)}")
        if not _is_number(self.alpha) or not math.isfinite(self.alpha) or self.alpha <= 0:
            raise UserError(
                f"sampler alpha must be a number > 0, got {self.alpha!r}: shares are n_lang ** alpha, so "
                "alpha <= 0 gives small languages as much or more weight than large ones without saying so; "
                "use name: balanced for equal shares"
            )
        self._check_oversample()
        cap = self.max_repeats_per_item
        if cap is not None and (not _is_number(cap) or not math.isfinite(cap) or cap < 1):
            raise UserError(
                f"max_repeats_per_item must be a number >= 1 or null, got {cap!r}: below 1 the rows cannot "
                "fill an epoch of one draw per row"
            )
        for key in ("seed", "reward_buckets"):
            value = getattr(self, key)
            if not _is_int(value) or value < 0:
                raise UserError(f"sampler {key} must be an integer >= 0, got {value!r}")
        if self.prompts_per_epoch is not None and (not _is_int(self.prompts_per_epoch) or self.prompts_per_epoch < 1):
            raise UserError(f"prompts_per_epoch must be an integer >= 1 or null, got {self.prompts_per_epoch!r}")

    def _check_oversample(self) -> None:
        if self.name == "oversample" and not self.oversample:
            raise UserError(
                "sampler 'oversample' needs at least one language to boost, e.g. oversample: {sw: 4.0}; "
                "without one it is the same as 'uniform'"
            )
        if self.name != "oversample" and self.oversample:
            raise UserError(
                f"oversample {dict(self.oversample)} is only read by the sampler named 'oversample', not "
                f"{self.name!r}; remove it or set name: oversample"
            )
        for lang, factor in self.oversample.items():
            if not isinstance(lang, str) or not _is_number(factor) or not math.isfinite(factor) or factor <= 0:
                raise UserError(
                    f"oversample factor for {lang!r} must be a number > 0, got {factor!r} "
                    "(2.0 makes each of its rows weigh as much as two rows of another language)"
                )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
