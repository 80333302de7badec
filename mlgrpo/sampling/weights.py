"""Language weights: pure functions from rows per language to the share of draws each language gets.

Every weighting has one signature, `(counts, config) -> shares`, where counts is {language: rows} and
shares is {language: share} summing to 1, and is found by name in `WEIGHTS` (the sampler never branches
on the name). `target_shares` adds the one step all weightings share: the cap on repeats per row.
Knows nothing about datasets, models, TRL or MLflow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from mlgrpo.errors import UserError
from mlgrpo.registry import Registry

if TYPE_CHECKING:
    from mlgrpo.sampling.config import SamplerConfig

LanguageWeights = Callable[[Mapping[str, int], "SamplerConfig"], dict[str, float]]
WEIGHTS: Registry[LanguageWeights] = Registry("language weighting")


def register_weights(name: str) -> Callable[[LanguageWeights], LanguageWeights]:
    """Add a weighting to WEIGHTS under `name`; a second weighting with the same name is an error."""

    return WEIGHTS.register(name)


def _check_counts(counts: Mapping[str, int]) -> None:
    if not counts:
        raise UserError("the sampler got no rows: there is no language to draw from")
    for lang, n in counts.items():
        if n <= 0:
            raise UserError(
                f"language {lang!r} has no rows ({n}): no sampler can give it a share; add rows in {lang!r} "
                "or remove it from the experiment's languages"
            )


def _normalise(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    return {lang: w / total for lang, w in weights.items()}


@register_weights("uniform")
def uniform(counts: Mapping[str, int], config: SamplerConfig) -> dict[str, float]:
    """Every row equally likely, so a language's share is its share of rows: n_l / N."""
    _check_counts(counts)
    return _normalise(counts)


@register_weights("balanced")
def balanced(counts: Mapping[str, int], config: SamplerConfig) -> dict[str, float]:
    """Every language the same share, 1 / L, however many rows it has."""
    _check_counts(counts)
    return {lang: 1.0 / len(counts) for lang in counts}


@register_weights("temperature")
def temperature(counts: Mapping[str, int], config: SamplerConfig) -> dict[str, float]:
    """p_l proportional to n_l ** alpha (mT5, XLM-R): between uniform (alpha=1) and balanced (alpha->0)."""
    _check_counts(counts)
    return _normalise({lang: float(n) ** config.alpha for lang, n in counts.items()})


@register_weights("oversample")
def oversample(counts: Mapping[str, int], config: SamplerConfig) -> dict[str, float]:
    """Uniform over rows, with each row of a named language weighing `factor` rows: p_l ~ n_l * factor_l."""
    _check_counts(counts)
    unknown = sorted(set(config.oversample) - set(counts))
    if unknown:
        raise UserError(
            f"oversample names {', '.join(map(repr, unknown))}, but the data has no rows in "
            f"{'that language' if len(unknown) == 1 else 'those languages'} (languages with rows: "
            f"{', '.join(sorted(counts))}); fix the code or add the rows"
        )
    return _normalise({lang: n * config.oversample.get(lang, 1.0) for lang, n in counts.items()})


def cap_shares(shares: np.ndarray, sizes: np.ndarray, draws: float, max_repeats: float) -> np.ndarray:
    """Shares lowered so that no row is drawn more than `max_repeats` times in `draws` draws (expected).

    A group of `sizes[i]` rows may take at most max_repeats * sizes[i] / draws of the draws. Groups over
    that limit are pinned to it and the freed share goes to the others in proportion to their shares,
    until none is over ("water filling").
    Raises UserError when all groups at their limits still cannot fill `draws`.
    """
    limits = max_repeats * np.asarray(sizes, dtype=np.float64) / draws
    if limits.sum() < 1.0 - 1e-9:
        raise UserError(
            f"max_repeats_per_item={max_repeats:g} allows at most {max_repeats * int(np.sum(sizes)):g} draws per epoch "
            f"from {int(np.sum(sizes))} rows, but {draws:g} are asked for; raise the cap or lower prompts_per_epoch"
        )
    shares = np.asarray(shares, dtype=np.float64)
    pinned = np.zeros(len(shares), dtype=bool)
    while True:  # each pass pins at least one more group, so this ends within len(shares) passes
        free_total = shares[~pinned].sum()
        scale = (1.0 - limits[pinned].sum()) / free_total if free_total > 0 else 0.0
        out = np.where(pinned, limits, shares * scale)
        over = ~pinned & (out > limits * (1 + 1e-12))
        if not over.any():
            return out
        pinned |= over


def target_shares(counts: Mapping[str, int], config: SamplerConfig, draws: int) -> dict[str, float]:
    """The share of each language in an epoch of `draws` draws: the weighting, then the repeat cap."""
    shares = WEIGHTS[config.name](counts, config)
    if config.max_repeats_per_item is None:
        return shares
    langs = list(shares)
    capped = cap_shares(
        np.array([shares[lang] for lang in langs]),
        np.array([counts[lang] for lang in langs]),
        draws,
        config.max_repeats_per_item,
    )
    return dict(zip(langs, capped.tolist()))
