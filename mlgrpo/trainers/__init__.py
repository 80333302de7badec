"""Trainers: orchestration of one training run on TRL's rollout engine. No math lives here.

- grpo.py:    MultilingualGRPOTrainer (trl.GRPOTrainer + registry advantages, language sampler, metrics)
- ppo.py:     PPOTrainer (the same engine + a critic, GAE and a clipped value loss)
- critic.py:  the value model; config.py: AlgorithmConfig / PPOSettings; metrics.py: pure reducers
- guard.py:   skips and counts optimiser steps whose loss or gradient is non-finite (a mixin of both)

Knows nothing about MLflow or experiment files: metrics leave through TRL's log() to callbacks.
"""

from mlgrpo.trainers.config import AlgorithmConfig, PPOSettings
from mlgrpo.trainers.grpo import MultilingualGRPOTrainer
from mlgrpo.trainers.ppo import PPOTrainer

TRAINERS = {"grpo": MultilingualGRPOTrainer, "ppo": PPOTrainer}

__all__ = ["TRAINERS", "AlgorithmConfig", "MultilingualGRPOTrainer", "PPOSettings", "PPOTrainer"]
