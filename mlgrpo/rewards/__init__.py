"""Rewards: plain functions with TRL's signature, found by name, combined with weights.

    completions (+ dataset columns) -> reward functions (registry) -> per-language transform
      -> guard (bad values counted, zeroed or fatal) -> list[float | None] per function -> TRL

Built-in rewards: exact_match, chrf (answers.py); numeric_answer (numeric.py); length, format (shape.py); language_consistency
(language.py); reward_model (model.py). `build_reward_functions` turns a RewardConfig into TRL-ready
functions and weights; `check_requirements` fails early when the data lacks a needed column.

Knows nothing about trainers, advantages or MLflow; importing it loads neither trl nor mlflow, and
transformers/torch only when a reward model scores something.
"""

from __future__ import annotations

from mlgrpo.rewards import answers, language, model, numeric, shape  # noqa: F401  (registers the built-in rewards)
from mlgrpo.rewards.build import (
    BoundReward,
    MissingColumn,
    build_reward_functions,
    check_requirements,
    missing_columns,
    weighted_total,
)
from mlgrpo.rewards.config import RewardConfig, RewardSpec
from mlgrpo.rewards.guard import BAD_KINDS, BadRewardError, GuardedReward, RewardGuard
from mlgrpo.rewards.language import language_consistency
from mlgrpo.rewards.registry import REWARDS, RewardEntry, get_reward, register, reward_names
from mlgrpo.rewards.transform import LanguageAffine, PerLanguage, transform_by_language

__all__ = [
    "BAD_KINDS", "REWARDS", "BadRewardError", "BoundReward", "GuardedReward", "LanguageAffine", "MissingColumn",
    "PerLanguage", "RewardConfig", "RewardEntry", "RewardGuard", "RewardSpec", "build_reward_functions",
    "check_requirements", "get_reward", "language_consistency", "missing_columns", "register", "reward_names",
    "transform_by_language",
    "weighted_total",
]
