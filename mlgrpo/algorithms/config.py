"""AdvantageConfig: every choice that turns rewards into advantages, validated when it is built.

Each field is documented once, here; YAML keys map 1:1 onto the fields. `__post_init__` rejects
combinations that would silently change what a method is, and says why. Nothing is filled in later:
`scale_scope` and `params` are read-only views of the fields.

The defaults are TRL's GRPO (trl 1.16, scale_rewards="group"): group by prompt, divide by the group's
sample std (ddof=1) plus eps=1e-4, NaN rewards get advantage 0. `AdvantageConfig()` reproduces TRL's
advantages; scale_rewards="batch" and "none" are std_scope="batch" and "none".
Knows nothing about models, data files or MLflow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlgrpo.algorithms.estimators import ESTIMATORS, EstimatorParams, EstimatorSpec
from mlgrpo.algorithms.grouping import GROUP_KEYS, GroupingParams
from mlgrpo.errors import UserError

STD_SCOPES = ("group", "language", "batch", "none")


@dataclass(frozen=True)
class AdvantageConfig:
    # Estimator name in ESTIMATORS: grpo, dr_grpo, rloo, reinforce_pp, reinforce_pp_token, gae.
    estimator: str = "grpo"
    # Rows that share a baseline, a name in GROUP_KEYS: prompt, language, prompt_in_language,
    # prompt_hash_bucket, length_bucket.
    group_by: str = "prompt"
    # Rows whose rewards give the std that advantages are divided by: group (the baseline group),
    # language, batch, or none. This is the method notes' "advantage normalisation": it is on by
    # default (grpo divides by the group std) and "none" turns it off. None means the estimator's own
    # convention: grpo group, reinforce_pp and reinforce_pp_token batch, dr_grpo, rloo and gae none.
    std_scope: str | None = None
    # Delta degrees of freedom of every std: 1 = sample std (TRL, torch.std); 0 = population std.
    ddof: int = 1
    # Added to every std before dividing (TRL: 1e-4; verl: 1e-6). Never added to a variance.
    eps: float = 1e-4
    # Buckets for group_by="prompt_hash_bucket" (the notes use 32).
    hash_buckets: int = 32
    # Increasing bucket edges for group_by="length_bucket"; bucket b holds [edges[b-1], edges[b]).
    length_edges: tuple[int, ...] = (32, 64, 128, 256, 512)
    # Advantage temperature: softmax within the group at T, T moving linearly from temperature_start at
    # step 0 to temperature_end at total_steps (notes: 1.0 -> 0.5). None: off.
    temperature_start: float | None = None
    temperature_end: float | None = None
    # A = mix_lambda * relative + (1 - mix_lambda) * absolute reward. 1.0: relative only.
    mix_lambda: float = 1.0
    # One weight per reward column for (N, K) rewards, each column with its own baseline (notes:
    # alpha * safety + (1 - alpha) * helpfulness). None: rewards are (N,).
    objective_weights: tuple[float, ...] | None = None
    # Weight of the inter-group regulariser (variance of group-mean advantages) in the loss. 0: off.
    inter_group_coef: float = 0.0
    # GAE discount and lambda (estimator="gae" only).
    gamma: float = 1.0
    lam: float = 0.95

    def __post_init__(self) -> None:
        spec = self.spec  # raises UserError naming the closest estimator
        GROUP_KEYS.get(self.group_by)
        if self.std_scope is not None and self.std_scope not in STD_SCOPES:
            raise UserError(f"std_scope {self.std_scope!r} is not one of {', '.join(STD_SCOPES)}")
        if self.scale_scope not in spec.scopes:
            raise UserError(
                f"estimator {self.estimator!r} does not admit std_scope={self.std_scope!r} (it admits "
                f"{', '.join(spec.scopes)}): {spec.paper} defines it that way; for GRPO with another scope "
                f"use estimator='grpo'"
            )
        self._check_numbers()
        if spec.per_token:
            self._check_per_token()

    @property
    def spec(self) -> EstimatorSpec:
        return ESTIMATORS.get(self.estimator)

    @property
    def scale_scope(self) -> str:
        """The std scope in force: std_scope, or the estimator's convention when it is None."""
        return self.spec.default_scope if self.std_scope is None else self.std_scope

    @property
    def params(self) -> EstimatorParams:
        return EstimatorParams(ddof=self.ddof, eps=self.eps, gamma=self.gamma, lam=self.lam)

    @property
    def grouping(self) -> GroupingParams:
        return GroupingParams(hash_buckets=self.hash_buckets, length_edges=self.length_edges)

    @property
    def uses_temperature(self) -> bool:
        return self.temperature_start is not None

    def _check_numbers(self) -> None:
        if self.ddof not in (0, 1):
            raise UserError(f"ddof must be 0 (population std) or 1 (sample std, TRL's), got {self.ddof}")
        if not (self.eps >= 0 and math.isfinite(self.eps)):
            raise UserError(f"eps must be a finite number >= 0, got {self.eps}")
        if self.hash_buckets < 1:
            raise UserError(f"hash_buckets must be >= 1, got {self.hash_buckets}")
        if not self.length_edges or any(b <= a for a, b in zip(self.length_edges, self.length_edges[1:])):
            raise UserError(f"length_edges must be non-empty and strictly increasing, got {list(self.length_edges)}")
        if (self.temperature_start is None) != (self.temperature_end is None):
            raise UserError("set both temperature_start and temperature_end (e.g. 1.0 and 0.5), or neither")
        if self.uses_temperature and min(self.temperature_start, self.temperature_end) <= 0:
            raise UserError(
                f"temperatures must be > 0 (exp(A / T)), got {self.temperature_start} -> {self.temperature_end}"
            )
        if not 0.0 <= self.mix_lambda <= 1.0:
            raise UserError(f"mix_lambda must be in [0, 1] (1: relative advantages only), got {self.mix_lambda}")
        if self.objective_weights is not None and (
            not self.objective_weights or not all(math.isfinite(w) for w in self.objective_weights)
        ):
            raise UserError(f"objective_weights must be non-empty and finite, got {self.objective_weights}")
        if self.inter_group_coef < 0:
            raise UserError(f"inter_group_coef must be >= 0, got {self.inter_group_coef}")
        if not (0.0 <= self.gamma <= 1.0 and 0.0 <= self.lam <= 1.0):
            raise UserError(f"gamma and lam must be in [0, 1], got gamma={self.gamma}, lam={self.lam}")

    def _check_per_token(self) -> None:
        shaping = {
            "temperature_start": self.uses_temperature,
            "mix_lambda": self.mix_lambda != 1.0,
            "objective_weights": self.objective_weights is not None,
            "inter_group_coef": self.inter_group_coef != 0.0,
        }
        used = [name for name, on in shaping.items() if on]
        if used:
            raise UserError(
                f"estimator {self.estimator!r} gives per-token advantages, but {', '.join(used)} reshape "
                f"per-completion advantages within groups; unset them or use a group estimator"
            )
