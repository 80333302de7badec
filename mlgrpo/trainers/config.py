"""The algorithm section of an arm: which advantages, and for PPO, which critic.

TRL's own loss settings (loss_type, epsilon, epsilon_high, beta, num_iterations ...) are not repeated
here: they stay in trl.GRPOConfig, which validates them. This module holds only what mlgrpo adds.
Knows nothing about models, data or MLflow.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.errors import UserError

VALUE_MODELS = ("separate", "head")
KL_MODES = ("loss", "reward")
ALGORITHMS = ("grpo", "ppo")


@dataclass(frozen=True)
class PPOSettings:
    """The critic and the KL placement of PPO (Ouyang et al. 2022; Huang et al. 2024, "The N+ implementation
    details of RLHF with PPO")."""

    # "separate": a value model of the policy's architecture, initialised from the policy's backbone, with
    # its own optimiser and learning rate (classic RLHF). "head": a linear value head on the policy's
    # backbone, trained through the policy's loss with weight vf_coef (cheaper, shares features).
    value_model: str = "separate"
    # Learning rate of the separate critic's AdamW.
    value_learning_rate: float = 1e-4
    # Weight of the value loss when value_model="head" (it shares the policy's optimiser).
    vf_coef: float = 0.1
    # Clip range of the value update around the rollout's values (PPO's clipped value loss).
    cliprange_value: float = 0.2
    # "reward": a per-token penalty -kl_coef * (log pi - log pi_ref) added to the rewards (classic RLHF);
    # "loss": TRL's beta * KL term in the policy loss (set `beta` in the training settings).
    kl_mode: str = "reward"
    # Weight of the per-token KL penalty with kl_mode="reward". 0 turns the penalty off.
    kl_coef: float = 0.05
    # Gradient-norm clip of the separate critic (the policy's clip is TRL's max_grad_norm).
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        if self.value_model not in VALUE_MODELS:
            raise UserError(f"ppo.value_model must be one of {', '.join(VALUE_MODELS)}, got {self.value_model!r}")
        if self.kl_mode not in KL_MODES:
            raise UserError(f"ppo.kl_mode must be one of {', '.join(KL_MODES)}, got {self.kl_mode!r}")
        for name in ("value_learning_rate", "vf_coef", "cliprange_value", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise UserError(f"ppo.{name} must be > 0, got {getattr(self, name)!r}")
        if self.kl_coef < 0:
            raise UserError(f"ppo.kl_coef must be >= 0, got {self.kl_coef!r}")


@dataclass(frozen=True)
class AlgorithmConfig:
    """What differs between GRPO-family arms and PPO. YAML keys map 1:1 onto the fields."""

    # "grpo": group-relative advantages, no critic. "ppo": a critic and per-token GAE.
    name: str = "grpo"
    # The advantage estimator, grouping, std scope and shaping options (see AdvantageConfig).
    advantage: AdvantageConfig = field(default_factory=AdvantageConfig)
    # PPO's critic and KL settings; ignored (and rejected if changed) for "grpo".
    ppo: PPOSettings = field(default_factory=PPOSettings)

    def __post_init__(self) -> None:
        if self.name not in ALGORITHMS:
            raise UserError(f"algorithm.name must be one of {', '.join(ALGORITHMS)}, got {self.name!r}")
        per_token = self.advantage.spec.per_token
        if self.name == "ppo" and not per_token:
            raise UserError(
                f"algorithm ppo needs a per-token estimator (gae), got advantage.estimator="
                f"{self.advantage.estimator!r}; set advantage.estimator: gae"
            )
        if self.name == "grpo" and per_token:
            raise UserError(
                "advantage.estimator gae needs a critic: use algorithm name: ppo, or a group estimator "
                "(grpo, dr_grpo, rloo, reinforce_pp) for GRPO"
            )
        if self.name == "grpo" and self.ppo != PPOSettings():
            raise UserError("algorithm.ppo settings are set but algorithm.name is grpo: GRPO has no critic")

    @classmethod
    def ppo_default(cls) -> AlgorithmConfig:
        """PPO as the comparison runs it: GAE (gamma 1, lambda 0.95) whitened over the batch."""
        return cls(name="ppo", advantage=AdvantageConfig(estimator="gae", std_scope="batch"))
