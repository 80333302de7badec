"""A loaded experiment and its plan: one RunSpec per (arm, seed), each with everything a worker needs.

    Experiment (validated, typed) -> plan() -> [RunSpec(arm, seed, typed configs, resolved dict, hash)]

An arm's configuration does not depend on the seed: the seed only seeds the run (TRL's seed, the
sampler's seed, the train subsample), so `config_hash` is the same for every seed of an arm.
`differences()` lists every setting in which arms differ in what they train with, defaults included
(effective.py); `declared_differences()` only the keys of the resolved YAML. Knows nothing about YAML
parsing, trainers or MLflow (the runner logs `flat_params`: the resolved keys and `effective.<key>`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from mlgrpo.errors import UserError
from mlgrpo.experiments.diff import differences, flatten, show
from mlgrpo.experiments.fields import closest, to_plain
from mlgrpo.experiments.sections import DataConfig, EvaluationConfig, ModelConfig, RunSettings, TrackingConfig
from mlgrpo.reports.settings import ReportConfig

if TYPE_CHECKING:  # importing mlgrpo.trainers loads torch and trl; the loader does it when it needs them
    from mlgrpo.rewards import RewardConfig
    from mlgrpo.sampling import SamplerConfig
    from mlgrpo.trainers.config import AlgorithmConfig, KLConfig, UpdateSchedule


@dataclass(frozen=True)
class ArmConfig:
    """One arm, resolved: the shared sections with the arm's overrides merged in, typed and checked."""

    name: str
    algorithm: AlgorithmConfig
    sampler: SamplerConfig | None  # None: TRL's own sampler. Its seed is replaced by each run's.
    rewards: RewardConfig
    training: dict[str, Any]  # trl.GRPOConfig keyword arguments, without the platform's fields
    model: ModelConfig
    update: UpdateSchedule
    kl: KLConfig
    resolved: dict[str, Any]  # every section as a nested dict; no seed in it
    effective: dict[str, Any]  # what the arm trains with, defaults included (effective.effective_view)
    declared: tuple[tuple, ...]  # key paths the arm's overrides set, ("training", "learning_rate")


@dataclass(frozen=True)
class RunSpec:
    """One run: an arm trained with one seed."""

    arm: str
    seed: int
    run_name: str  # "<arm>-seed<seed>"
    algorithm: AlgorithmConfig
    sampler: SamplerConfig | None  # seeded with `seed`; None: TRL's sampler
    rewards: RewardConfig
    training: dict[str, Any]
    model: ModelConfig
    update: UpdateSchedule
    kl: KLConfig
    data: DataConfig
    evaluation: EvaluationConfig
    resolved: dict[str, Any]  # the arm's full configuration (seed-independent)
    effective: dict[str, Any]  # what the arm trains with, defaults included
    # "algorithm.advantage.std_scope" -> "language" and "effective.kl.coef" -> "0.05", for MLflow params
    flat_params: dict[str, str]
    config_hash: str  # first 12 hex digits of sha256(resolved as canonical JSON)


def config_hash(resolved: dict[str, Any]) -> str:
    blob = json.dumps(resolved, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


# A key added to a section after runs were made reads, while unused, as if it did not exist: an arm that does not
# use it keeps its config hash, so its finished runs are still found (resumed or skipped) by the runner.
def _unused_keys_dropped(plain: dict[str, Any], unused: Sequence[str]) -> dict[str, Any]:
    return {key: value for key, value in plain.items() if key not in unused}


def hashed_algorithm(algorithm) -> dict[str, Any]:
    """The algorithm as hashed: without dynamic sampling, as it read before that key."""
    unused = () if algorithm.dynamic_sampling.enabled else ("dynamic_sampling",)
    return _unused_keys_dropped(to_plain(algorithm), unused)


def hashed_update(update) -> dict[str, Any]:
    """The update schedule as hashed: without a group schedule, as it read before that key."""
    return _unused_keys_dropped(to_plain(update), () if update.group_schedule else ("group_schedule",))


def hashed_rewards(rewards) -> dict[str, Any]:
    """The rewards as hashed: without a control, and each reward without `clip`, as they read before those keys."""
    plain = _unused_keys_dropped(to_plain(rewards), ("control",) if rewards.control == "none" else ())
    plain["rewards"] = [_unused_keys_dropped(spec, ("clip",) if spec["clip"] is None else ())
                        for spec in plain["rewards"]]
    return plain


@dataclass(frozen=True)
class Experiment:
    """A validated experiment file. Build it with `load_experiment(path)`."""

    name: str
    description: str
    path: Path
    raw: dict[str, Any]  # the parsed YAML, as written
    model: ModelConfig  # the shared model (an arm may change only `lora`)
    data: DataConfig  # languages filled in from the suite or file when the file left them out
    evaluation: EvaluationConfig
    tracking: TrackingConfig  # experiment filled in (default: name)
    run_settings: RunSettings  # output_dir filled in (default: runs/<name>)
    arms: tuple[str, ...]  # in file order
    seeds: tuple[int, ...]
    data_summary: dict[str, tuple[int, int]]  # language -> (train rows, eval rows) of the first seed
    notes: tuple[str, ...]  # things that are allowed but worth a look (an override that changes nothing ...)
    warnings: tuple[str, ...]  # things that are allowed but make a comparison say less (a ratio that stays 1)
    arm_configs: dict[str, ArmConfig] = field(repr=False)
    report: ReportConfig = field(default_factory=ReportConfig)  # how `mlgrpo report` reads the results

    @property
    def tracking_experiment(self) -> str:
        return self.tracking.experiment or self.name

    def plan(self, only: Sequence[str] | None = None, seeds: Sequence[int] | None = None) -> list[RunSpec]:
        """Runs, seed by seed and within a seed in arm order (so that early results compare arms)."""
        arms = self._pick(only, self.arms, "arm")
        chosen_seeds = self._pick(seeds, self.seeds, "seed")
        return [self._run(self.arm_configs[arm], seed) for seed in chosen_seeds for arm in arms]

    def _pick(self, wanted, available: tuple, what: str) -> list:
        if wanted is None:
            return list(available)
        if isinstance(wanted, (str, int)):
            wanted = [wanted]
        for item in wanted:
            if item not in available:
                hint = closest(item, map(str, available)) if what == "arm" else ""
                raise UserError(f"{self.path}: {what} {item!r} is not in the experiment{hint}; its {what}s: "
                                f"{', '.join(map(str, available))}")
        return [item for item in available if item in set(wanted)]

    def _run(self, arm: ArmConfig, seed: int) -> RunSpec:
        sampler = None if arm.sampler is None else dataclasses.replace(arm.sampler, seed=seed)
        params = {**flatten(arm.resolved), **flatten(arm.effective, "effective.")}
        return RunSpec(
            arm=arm.name, seed=seed, run_name=f"{arm.name}-seed{seed}", algorithm=arm.algorithm, sampler=sampler,
            rewards=arm.rewards, training=arm.training, model=arm.model, update=arm.update, kl=arm.kl, data=self.data,
            evaluation=self.evaluation, resolved=arm.resolved, effective=arm.effective,
            flat_params={k: show(v) for k, v in params.items()}, config_hash=config_hash(arm.resolved),
        )

    def differences(self) -> list[tuple[str, dict[str, object]]]:
        """(dotted key, {arm: value}) for every setting in which arms differ in what they train with,
        defaults included (PPO's critic, where each arm's KL sits, TRL's defaults, the update schedule)."""
        return differences({arm: self.arm_configs[arm].effective for arm in self.arms})

    def declared_differences(self) -> list[tuple[str, dict[str, object]]]:
        """(dotted key, {arm: value}) for the keys of the resolved YAML whose values differ between arms."""
        return differences({arm: self.arm_configs[arm].resolved for arm in self.arms})

    def resolved(self) -> dict[str, Any]:
        """The whole experiment with every default filled in and every arm fully resolved."""
        return {
            "name": self.name,
            "description": self.description,
            "seeds": list(self.seeds),
            "run": dataclasses.asdict(self.run_settings),
            "tracking": {**dataclasses.asdict(self.tracking), "experiment": self.tracking_experiment},
            "report": dataclasses.asdict(self.report),
            "arms": {arm: {"config_hash": config_hash(self.arm_configs[arm].resolved), **self.arm_configs[arm].resolved,
                           "effective": self.arm_configs[arm].effective} for arm in self.arms},
        }

    def resolved_yaml(self) -> str:
        """`resolved()` as YAML, for the MLflow artifact experiment.resolved.yaml."""
        return yaml.safe_dump(self.resolved(), sort_keys=False, allow_unicode=True, width=120)
