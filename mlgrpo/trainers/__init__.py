"""Trainers: orchestration of one training run on TRL's rollout engine. No math lives here.

- grpo.py:    MultilingualGRPOTrainer (trl.GRPOTrainer + registry advantages, language sampler, metrics)
- ppo.py:     PPOTrainer (the same engine + a critic, GAE and a clipped value loss)
- sft.py:     SupervisedTrainer (the same engine and data order, the records' answers instead of rollouts)
- dynamic.py: DAPO's dynamic sampling: constant groups dropped, the rollout refilled with fresh prompts
- scheduled_groups.py: the group-size schedule: each rollout laid out and generated with its own G
- rollout.py: what a rollout carries besides TRL's batch (BatchRows, RolloutAdvantages, mlgrpo's batch columns)
- critic.py:  the value model and its optimiser step; metrics.py: pure reducers
- config.py:  AlgorithmConfig / PPOSettings, KLConfig (one KL for every arm), UpdateSchedule (minibatches, epochs,
              group_schedule)
- guard.py:   skips and counts optimiser steps whose loss or gradient is non-finite (a mixin of both)
- checkpoints.py: what a checkpoint needs beyond HF's to resume exactly; trl_adapter.py: TRLAdapter, the one class that
              overrides TRL's private methods (routed to the trainers' public hooks) or reads its private state

Knows nothing about MLflow or experiment files: metrics leave through TRL's log() to callbacks.
"""

from mlgrpo.trainers.config import AlgorithmConfig, DynamicSampling, KLConfig, PPOSettings, SFTSettings, UpdateSchedule
from mlgrpo.trainers.grpo import MultilingualGRPOTrainer
from mlgrpo.trainers.ppo import PPOTrainer
from mlgrpo.trainers.sft import SupervisedTrainer

from mlgrpo.registry import Registry

TRAINERS: Registry[type] = Registry("algorithm")
for _name, _trainer in (("grpo", MultilingualGRPOTrainer), ("ppo", PPOTrainer), ("sft", SupervisedTrainer)):
    TRAINERS.add(_name, _trainer)

__all__ = ["TRAINERS", "AlgorithmConfig", "DynamicSampling", "KLConfig", "MultilingualGRPOTrainer", "PPOSettings", "PPOTrainer",
           "SFTSettings", "SupervisedTrainer", "UpdateSchedule"]
