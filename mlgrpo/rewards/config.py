"""Typed reward configuration: which rewards, with which weights and parameters, and what to do with
bad rewards. YAML maps 1:1 onto these fields; unknown keys are errors naming the closest valid key.

    on_bad_reward: zero            # or fail (see guard.py)
    control: none                  # or shuffle / random: a random-reward control arm (control.py)
    rewards:
      - name: exact_match          # a registered reward
        weight: 1.0                # its weight in TRL's weighted sum (0: logged, not trained on)
      - name: format
        label: think_format        # the logged name, rewards/think_format/mean (default: name)
        params: {pattern: "<think>.*</think>.*"}
      - name: reward_model
        params: {path: ./rm}
        per_language: {sw: {scale: 0.2, offset: -0.5}}
        clip: {min: -5.0, max: 5.0}   # or {lower_quantile: 0.05, upper_quantile: 0.95}: winsorised per batch

Knows nothing about trainers, advantages or MLflow.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.rewards.control import CONTROLS
from mlgrpo.rewards.guard import ON_BAD_REWARD
from mlgrpo.rewards.registry import REQUIRED, closest, get_reward
from mlgrpo.rewards.transform import LanguageAffine

# TRL logs rewards/<label>/mean: keep labels to one path segment of plain characters.
_LABEL = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class RewardClip:
    """Bounds on one reward's values in training, before the weighted sum (mlgrpo.algorithms.reward_clip).

    min / max: fixed bounds. lower_quantile / upper_quantile: the quantiles of the reward's values in each
    generation batch (winsorising). Both kinds may be given; the tighter bound wins. Evaluation scores the
    unclipped reward, so every arm is measured on the same scale.
    """

    min: float | None = None
    max: float | None = None
    lower_quantile: float | None = None
    upper_quantile: float | None = None

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        if all(v is None for v in values.values()):
            raise UserError("clip: give min and/or max (fixed bounds), or lower_quantile and/or upper_quantile "
                            "(winsorising); remove clip to leave the reward as it is")
        for name, value in values.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)
                                      or not math.isfinite(value)):
                raise UserError(f"clip.{name} must be a finite number, got {value!r}")
        for name in ("lower_quantile", "upper_quantile"):
            if values[name] is not None and not 0.0 <= values[name] <= 1.0:
                raise UserError(f"clip.{name} must be in [0, 1] (a share of the batch), got {values[name]!r}")
        for low, high in (("min", "max"), ("lower_quantile", "upper_quantile")):
            if values[low] is not None and values[high] is not None and values[low] >= values[high]:
                raise UserError(f"clip.{low} ({values[low]}) must be below clip.{high} ({values[high]})")


@dataclass(frozen=True)
class RewardSpec:
    """One reward in the mix.

    name: the registered reward. weight: its weight in the sum (finite; negative makes a penalty).
    params: the reward's parameters (keyword-only arguments of its function). label: the name TRL
    logs it under (default `name`; needed to use one reward twice). per_language: language code ->
    LanguageAffine applied to this reward's values (transform.py); needs a `language` column.
    clip: bounds on its values in training (RewardClip), applied after the language transform.
    """

    name: str
    weight: float = 1.0
    params: Mapping[str, Any] = field(default_factory=dict)
    label: str | None = None
    per_language: Mapping[str, LanguageAffine] = field(default_factory=dict)
    clip: RewardClip | None = None

    def __post_init__(self) -> None:
        entry = get_reward(self.name)
        where = f"reward {self.display_name!r}"
        if isinstance(self.weight, bool) or not isinstance(self.weight, numbers.Real) or not math.isfinite(self.weight):
            raise UserError(f"{where}: weight must be a finite number, got {self.weight!r}")
        if self.label is not None and not _LABEL.fullmatch(self.label):
            raise UserError(f"{where}: label may use only letters, digits, '_', '.' and '-' (it becomes part of "
                            f"the metric name rewards/<label>/mean), got {self.label!r}")
        valid = entry.params
        for key in self.params:
            if key not in valid:
                raise UserError(f"{where}: unknown parameter {key!r}{closest(key, valid)}; "
                                f"{self.name} takes: {', '.join(valid) or 'no parameters'}")
        for key, default in valid.items():
            if default is REQUIRED and key not in self.params:
                raise UserError(f"{where}: parameter {key!r} is required (set params.{key})")
        for lang, affine in self.per_language.items():
            if not isinstance(lang, str) or not isinstance(affine, LanguageAffine):
                raise UserError(f"{where}: per_language must map language codes to LanguageAffine, got "
                                f"{lang!r}: {affine!r}")

    @property
    def display_name(self) -> str:
        return self.label or self.name

    @property
    def requires(self) -> tuple[str, ...]:
        """Columns every scored row needs ("a|b": either); the transform adds `language`."""
        needs = get_reward(self.name).requires
        if self.per_language and "language" not in needs:
            needs = (*needs, "language")
        return needs


def check_distinct_names(specs: Sequence[RewardSpec]) -> None:
    """TRL logs each function as rewards/<__name__>/mean: two equal names would mix their logs."""
    seen: set[str] = set()
    for spec in specs:
        if spec.display_name in seen:
            raise UserError(f"two rewards are named {spec.display_name!r}; give one a distinct `label` so that "
                            "each is logged under its own rewards/<label>/mean")
        seen.add(spec.display_name)


@dataclass(frozen=True)
class RewardConfig:
    """The rewards of a run and the policy for bad reward values ("zero" or "fail", see guard.py)."""

    rewards: tuple[RewardSpec, ...]
    on_bad_reward: str = "zero"
    # A random-reward control arm (control.py): "shuffle" permutes each batch's rewards among its completions,
    # "random" redraws them at the batch's firing rate; "none" trains on the real rewards. Evaluation is real.
    control: str = "none"

    def __post_init__(self) -> None:
        if not self.rewards:
            raise UserError("rewards: at least one reward is needed (e.g. - name: exact_match)")
        if self.control not in CONTROLS:
            raise UserError(f"control must be one of {', '.join(CONTROLS)}, got {self.control!r}"
                            f"{closest(str(self.control), CONTROLS)}")
        if self.on_bad_reward not in ON_BAD_REWARD:
            raise UserError(f"on_bad_reward must be one of {', '.join(ON_BAD_REWARD)}, got "
                            f"{self.on_bad_reward!r}{closest(str(self.on_bad_reward), ON_BAD_REWARD)}")
        check_distinct_names(self.rewards)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "rewards config") -> RewardConfig:
        """Parse the YAML shape shown in the module docstring; errors say where and the closest key."""
        _reject_unknown(data, {f.name for f in fields(cls)}, where)
        items = data.get("rewards")
        if not isinstance(items, Sequence) or isinstance(items, str):
            raise UserError(f"{where}: rewards must be a list of rewards, got {items!r}")
        specs = tuple(_spec_from_dict(item, f"{where}: rewards[{i}]") for i, item in enumerate(items))
        return cls(rewards=specs, on_bad_reward=data.get("on_bad_reward", "zero"), control=data.get("control", "none"))


def _reject_unknown(data: Any, valid: set[str], where: str) -> None:
    if not isinstance(data, Mapping):
        raise UserError(f"{where}: expected a mapping of keys, got {data!r}")
    for key in data:
        if key not in valid:
            raise UserError(f"{where}: unknown key {key!r}{closest(str(key), valid)}; valid keys: "
                            f"{', '.join(sorted(valid))}")


def _spec_from_dict(item: Any, where: str) -> RewardSpec:
    _reject_unknown(item, {f.name for f in fields(RewardSpec)}, where)
    if "name" not in item:
        raise UserError(f"{where}: each reward needs a name")
    params, per_language = item.get("params") or {}, item.get("per_language") or {}
    for key, value in (("params", params), ("per_language", per_language)):
        if not isinstance(value, Mapping):
            raise UserError(f"{where}: {key} must be a mapping, got {value!r}")
    clip = item.get("clip")
    if clip is not None:
        _reject_unknown(clip, {f.name for f in fields(RewardClip)}, f"{where}: clip")
        try:
            clip = RewardClip(**clip)
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None
    table = {}
    for lang, affine in per_language.items():
        _reject_unknown(affine, {"scale", "offset"}, f"{where}: per_language.{lang}")
        try:
            table[str(lang).lower()] = LanguageAffine(**affine)
        except ValueError as exc:
            raise UserError(f"{where}: per_language.{lang}: {exc}") from None
    try:
        return RewardSpec(name=item["name"], weight=item.get("weight", 1.0), params=dict(params),
                          label=item.get("label"), per_language=table, clip=clip)
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None
