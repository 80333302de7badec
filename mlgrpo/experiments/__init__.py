"""Experiments: one YAML file describes a comparison (arms x seeds); this package reads, checks and plans it.

    source.py    safe YAML with the line of every key; tags, duplicate keys and alias bombs refused
    fields.py    the type check shared by every section (also for TRL's and peft's fields)
    sections.py  model, data, evaluation, tracking, run: typed and documented once
    training.py  the `training` section against trl.GRPOConfig, LoRA against peft; grpo_config()
    data.py      a run's train and eval records (the same for every arm of a seed)
    diff.py      deep merge of an arm's overrides, dotted keys, differences between arms
    plan.py      Experiment and RunSpec: runs, differences, resolved YAML, config hashes
    loader.py    load_experiment(path): all of the above, errors as "file:line: key: reason"
    runner.py, worker.py, progress.py   executing a plan (`mlgrpo run`)
    placement.py  which run on which GPUs of this machine, in waves; ranks.py: one run on N ranks (torchrun)
    cluster.py, ray_backend.py   run.backend ray: checkpoints every node reaches, a Ray task per run

    exp = load_experiment("experiments/quickstart.yaml")
    for run in exp.plan(): ...   # run.algorithm, run.sampler, run.rewards, run.training, run.config_hash

Importing this package is cheap: torch, trl and peft load when an experiment is loaded.
Knows nothing about MLflow (the runner and mlgrpo.tracking own it).
"""

from mlgrpo.experiments.data import load_run_data
from mlgrpo.experiments.loader import load_experiment
from mlgrpo.experiments.plan import ArmConfig, Experiment, RunSpec
from mlgrpo.experiments.sections import DataConfig, EvaluationConfig, ModelConfig, RunSettings, TrackingConfig
from mlgrpo.experiments.training import grpo_config

__all__ = [
    "ArmConfig", "DataConfig", "EvaluationConfig", "Experiment", "ModelConfig", "RunSettings",
    "RunSpec", "TrackingConfig", "grpo_config", "load_experiment", "load_run_data",
]  # fmt: skip
