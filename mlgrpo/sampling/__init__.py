"""Sampling: which prompts each GRPO generation batch holds, by language (and by reward, when known).

    weights.py   pure functions {language: rows} -> {language: share}, registered by name, and the
                 cap on repeats per row
    buckets.py   reward quantile bucket of each prompt, from the rewards of earlier steps
    draws.py     vectorised drawing: per-epoch language quotas and order, rows least drawn first
    sampler.py   LanguageSampler, a drop-in for TRL's RepeatSampler (same index layout)
    shard.py     the slice of one global order that each rank reads
    group_schedule.py  the group-size schedule (G per rollout) and the sampler that lays each rollout out
                 with its own G from one prompt stream
    config.py    SamplerConfig, the typed configuration

Sits between the data layer (records with a "language" field) and rollout. Knows language labels,
row indices and scalar rewards only: nothing about models, tokenizers, TRL, transformers or MLflow,
and importing it imports none of them.
"""

from mlgrpo.sampling.buckets import reward_buckets
from mlgrpo.sampling.config import SamplerConfig
from mlgrpo.sampling.sampler import LanguageSampler
from mlgrpo.sampling.shard import rank_shard
from mlgrpo.sampling.weights import WEIGHTS, cap_shares, register_weights, target_shares

__all__ = [
    "WEIGHTS",
    "LanguageSampler",
    "SamplerConfig",
    "cap_shares",
    "rank_shard",
    "register_weights",
    "reward_buckets",
    "target_shares",
]
