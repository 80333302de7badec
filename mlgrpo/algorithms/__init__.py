"""Group statistics and advantage estimators: pure tensor math between rewards and the trainer step.

    rewards (N,) + GroupKeys -> compute_advantages(rewards, keys, cfg) -> advantages + metrics

- group_stats.py: the one on-device primitive (per-group mean/std/count over arbitrary ids);
- grouping.py:    group keys (prompt, language, prompt in language, hash bucket, length bucket);
- estimators.py:  the estimator registry (grpo, dr_grpo, rloo, reinforce_pp, gae);
- shaping.py:     temperature, relative/absolute mix, inter-group regulariser (and its per-row weights);
- weighting.py:   one reward per completion from the reward columns (TRL's nansum rule, or all required);
- kl.py:          KL estimators k1, k2, k3 (registry); ppo.py: PPO's token rewards and per-token KL penalty;
- config.py:      AdvantageConfig; advantages.py: compute_advantages, the trainer's entry point;
- dynamic_sampling.py: DAPO's constant-group test and the groups that fill a batch;
- policy_loss.py: the policy loss of every TRL loss_type (surrogate + normaliser registries), entropy bonus;
- losses.py:      LOSSES, every loss by name (policy, entropy, value, kl_penalty, sft, inter_group) as
                  (loss, metrics), and PPO's explained variance (imported directly by the trainers).

This package knows nothing about models, tokenizers, datasets, trainers or MLflow: importing it imports
torch and nothing of transformers, trl or mlflow (tests/algorithms checks this in a subprocess).
"""

from mlgrpo.algorithms.advantages import AdvantageResult, compute_advantages, per_completion_advantage
from mlgrpo.algorithms.config import STD_SCOPES, AdvantageConfig
from mlgrpo.algorithms.dynamic_sampling import constant_groups, select_groups
from mlgrpo.algorithms.estimators import (
    ESTIMATORS, EstimatorBatch, EstimatorParams, EstimatorSpec, register_estimator, whiten_tokens,
)  # fmt: skip
from mlgrpo.algorithms.group_stats import GroupStats, GroupTable, dense_index, group_max, group_stats, pair_ids
from mlgrpo.algorithms.grouping import GROUP_KEYS, GroupingParams, GroupKeys, stable_hash
from mlgrpo.algorithms.kl import KL_ESTIMATORS
from mlgrpo.algorithms.ppo import kl_penalty, token_rewards
from mlgrpo.algorithms.registry import Registry
from mlgrpo.algorithms.shaping import (
    InterGroupRows,
    inter_group_change,
    inter_group_rows,
    inter_group_variance,
    mix_relative_absolute,
    scheduled_temperature,
    temperature_advantages,
)
from mlgrpo.algorithms.weighting import WEIGHTINGS, all_scored, any_scored

__all__ = [
    "ESTIMATORS",
    "GROUP_KEYS",
    "KL_ESTIMATORS",
    "WEIGHTINGS",
    "STD_SCOPES",
    "AdvantageConfig",
    "AdvantageResult",
    "EstimatorBatch",
    "EstimatorParams",
    "EstimatorSpec",
    "GroupKeys",
    "GroupStats",
    "GroupTable",
    "GroupingParams",
    "InterGroupRows",
    "Registry",
    "all_scored",
    "any_scored",
    "compute_advantages",
    "constant_groups",
    "dense_index",
    "group_max",
    "group_stats",
    "inter_group_change",
    "inter_group_rows",
    "inter_group_variance",
    "kl_penalty",
    "mix_relative_absolute",
    "pair_ids",
    "per_completion_advantage",
    "register_estimator",
    "scheduled_temperature",
    "select_groups",
    "stable_hash",
    "temperature_advantages",
    "token_rewards",
    "whiten_tokens",
]
