"""load_experiment: an experiment file -> a validated Experiment, or one UserError "file:line: key: reason".

    safe YAML with lines (source) -> top-level keys -> name, seeds, model, data, evaluation, tracking, run
    -> the data itself (every language has rows, enough for the counts asked)
    -> each arm: shared sections + the arm's overrides (deep merge) -> typed configs (AlgorithmConfig,
       KLConfig, UpdateSchedule, SamplerConfig, RewardConfig, GRPOConfig settings, LoRA) -> checks against
       the data (reward columns, languages named by transforms and samplers) -> trl.GRPOConfig with the
       schedule and the KL mapped onto it, so TRL's checks apply -> the arm's effective settings

An error found in an arm's merged configuration points at the arm's line when the arm declared that
key (or its section), and at the shared section otherwise. Nothing trains and no model is loaded.
Knows nothing about trainers' internals, the runner or MLflow.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.experiments.data import language_table, load_run_data, read_file_rows
from mlgrpo.experiments.diff import ABSENT, canonical, deep_merge, get_path, leaf_paths
from mlgrpo.experiments.effective import effective_view, schedule_warning
from mlgrpo.experiments.fields import FieldError, build_dataclass, check_mapping, closest, coerce, to_plain
from mlgrpo.experiments.inforce import learning_rate_warning
from mlgrpo.experiments.plan import (
    ArmConfig, Experiment, config_hash, hashed_algorithm, hashed_rewards, hashed_update,
)
from mlgrpo.experiments.sections import (
    NAME, DataConfig, EvaluationConfig, Header, ModelConfig, RunSettings, TrackingConfig,
)  # fmt: skip
from mlgrpo.experiments.source import ConfigError, Source, dotted, read_source
from mlgrpo.experiments.training import (
    build_grpo_config, check_group_schedule, check_lora, check_ppo_engine, check_training, trl_settings,
)  # fmt: skip
from mlgrpo.reports.settings import ReportConfig

# Top-level keys, in the order the shipped files use them.
SECTIONS = ("name", "description", "model", "data", "algorithm", "kl", "update", "sampler", "rewards", "training",
            "arms", "seeds", "evaluation", "tracking", "run", "report")
REQUIRED = {"name": "name: my-study", "model": "model: {policy: tiny}", "data": "data: {suite: numbers}",
            "rewards": "rewards: {rewards: [{name: exact_match}]}", "arms": "arms: {grpo: {}}",
            "seeds": "seeds: [0, 1]"}
# What an arm may override; everything else is shared by construction, and why.
ARM_SECTIONS = ("algorithm", "kl", "update", "sampler", "training", "rewards", "model")
SHARED_ONLY = {
    "data": "every arm trains on the same data in the same order",
    "evaluation": "every arm is measured on the same prompts in the same way",
    "seeds": "every arm runs the same seeds",
    "tracking": "all arms are recorded in one MLflow experiment",
    "run": "how runs are executed cannot change a result",
    "report": "how results are read cannot change a result",
    "name": "it names the whole experiment",
    "description": "it describes the whole experiment",
    "arms": "arms do not nest",
}
SAMPLER_EXCLUDED = {"seed": "each run's sampler is seeded with the run's seed, the same for every arm"}
# Keys that moved to their own sections: the KL is one setting for every arm, not PPO's alone.
MOVED = {("algorithm", "ppo", "kl_coef"): "the KL is the kl section now (kl.coef), the same for every arm",
         ("algorithm", "ppo", "kl_mode"): "where the KL acts is kl.placement now (auto: PPO's reward, GRPO's loss)"}
# The shapes of RewardConfig.from_dict's messages (where="rewards"), to find the line they are about.
_REWARD_ITEM = re.compile(r"rewards: rewards\[(\d+)\]: (.*)", re.S)
_UNKNOWN_KEY = re.compile(r"unknown key '([^']*)'")


def load_experiment(path: str | Path) -> Experiment:
    """Read, type and check an experiment file, its data included; raises UserError with file:line: key."""
    source = read_source(path)
    try:
        return _Builder(source, Path(path)).build()
    except ConfigError as exc:
        raise source.error(exc.path, exc.reason) from None


class _Builder:
    def __init__(self, source: Source, path: Path):
        self.source, self.path, self.base = source, path, path.resolve().parent
        self.notes: list[str] = []

    def build(self) -> Experiment:
        top = self._top()
        header = build_dataclass(Header, {k: top[k] for k in ("name", "description", "seeds") if k in top}, ())
        model = self._model(top["model"])
        data = build_dataclass(DataConfig, self._data_paths(top["data"]), ("data",))
        evaluation = build_dataclass(EvaluationConfig, top.get("evaluation") or {}, ("evaluation",))
        tracking = build_dataclass(TrackingConfig, top.get("tracking") or {}, ("tracking",))
        tracking = dataclasses.replace(tracking, experiment=tracking.experiment or header.name)
        run = build_dataclass(RunSettings, top.get("run") or {}, ("run",))
        run = dataclasses.replace(run, output_dir=run.output_dir or f"runs/{header.name}")
        report = build_dataclass(ReportConfig, top.get("report") or {}, ("report",))
        data, train, held_out = self._load_data(data, evaluation, header.seeds[0])
        shared = {"algorithm": top.get("algorithm") or {}, "kl": top.get("kl") or {}, "update": top.get("update") or {},
                  "sampler": top.get("sampler"), "rewards": top["rewards"], "training": top.get("training") or {},
                  "model": {"lora": top["model"].get("lora")}}
        context = _Context(model, data, evaluation, train + held_out, run, header.seeds[0])
        arms, base = self._arms(top["arms"], shared, context)
        self._note_overrides(arms, base)
        self._note_model(model, data, evaluation, arms)
        warnings = tuple(w for arm in arms.values() for w in (schedule_warning(arm.name, arm.update, arm.algorithm.name),
                                                               learning_rate_warning(arm.name, arm.effective["training"]))
                         if w)
        return Experiment(
            name=header.name, description=header.description, path=self.path, raw=self.source.data, model=model,
            data=data, evaluation=evaluation, tracking=tracking, run_settings=run, arms=tuple(arms),
            seeds=header.seeds, data_summary=language_table(train, held_out, data.languages), notes=tuple(self.notes),
            warnings=warnings, arm_configs=arms, report=report,
        )

    def _top(self) -> Mapping:
        top = check_mapping(self.source.data, (), "a mapping of sections (name, model, data, rewards, arms, seeds ...)")
        for key in top:
            if key not in SECTIONS:
                raise ConfigError((key,), f"unknown section {key!r}{closest(key, SECTIONS)}; valid sections: "
                                          f"{', '.join(SECTIONS)}")
        for key, example in REQUIRED.items():
            if key not in top:
                raise ConfigError((key,), f"missing; every experiment needs it, e.g. `{example}`")
        return top

    def _model(self, raw: Any) -> ModelConfig:
        check_mapping(raw, ("model",))
        raw = dict(raw)
        for key in ("policy", "tokenizer"):
            raw[key] = self._local_path(raw.get(key)) if key in raw else raw.get(key)
        if "policy" not in raw:
            raise ConfigError(("model", "policy"), "missing: tiny, tiny:<options>, a local folder or a hub id")
        model = build_dataclass(ModelConfig, raw, ("model",))
        return dataclasses.replace(model, lora=check_lora(model.lora))

    def _local_path(self, spec: Any) -> Any:
        """A relative folder or file is read from the experiment file's folder (hub ids, tiny and packaged
        names are left alone)."""
        if isinstance(spec, str) and spec and not Path(spec).is_absolute() and (self.base / spec).exists():
            return str((self.base / spec).resolve())
        return spec

    def _data_paths(self, raw: Any) -> Any:
        if not isinstance(raw, Mapping):
            return raw
        out = dict(raw)
        for key in ("file", "eval_file"):
            if isinstance(out.get(key), str) and not Path(out[key]).is_absolute():
                out[key] = str(self.base / out[key])
        return out

    def _load_data(self, data: DataConfig, evaluation: EvaluationConfig, seed: int):
        """(data with its languages filled in, train records, eval records), checked language by language."""
        try:
            if data.languages is None:
                counts = data.per_language
                languages = tuple(counts) if isinstance(counts, dict) else self._all_languages(data)
                data = dataclasses.replace(data, languages=languages)
            train, held_out = load_run_data(data, seed, eval_per_language=evaluation.per_language)
        except FieldError as exc:
            if exc.field == "eval_per_language":
                raise ConfigError(("evaluation", "per_language"), f"{exc.reason} (held-out rows per language; raise "
                                                                  "data.eval_share or lower this)") from None
            raise ConfigError(("data", exc.field), exc.reason) from None
        self._check_metrics(evaluation, held_out)
        return data, train, held_out

    def _all_languages(self, data: DataConfig) -> tuple[str, ...]:
        if data.suite is not None:
            from mlgrpo.data.suites import available_suites

            return available_suites()[data.suite].languages
        rows = read_file_rows(data, None)
        for kind, count in rows.dropped.items():
            self.notes.append(f"data.file: {count} rows dropped ({kind}); `mlgrpo data inspect` shows them")
        if rows.other_languages.get("und"):
            self.notes.append(f"data.file: {rows.other_languages['und']} rows of undetermined language left out")
        return tuple(code for code, _ in Counter(r["language"] for r in rows.records).most_common())

    def _check_metrics(self, evaluation: EvaluationConfig, held_out: list[dict]) -> None:
        """Every metric's required field ("answers|reference": either) is in every held-out row."""
        from mlgrpo.evaluation import get_metric
        from mlgrpo.rewards.texts import has_value

        for name in evaluation.metrics:
            needs = get_metric(name).requires
            if not needs:
                continue
            lacking = sum(not any(has_value(r.get(f)) for f in needs.split("|")) for r in held_out)
            if lacking:
                fields = " or ".join(map(repr, needs.split("|")))
                raise ConfigError(("evaluation", "metrics"), f"{name} needs {fields} in every eval row, but "
                                  f"{lacking} of {len(held_out)} have none; remove {name} or add the field")

    def _arms(self, raw: Any, shared: dict, context: _Context) -> tuple[dict[str, ArmConfig], dict | None]:
        """Every arm resolved and checked, and the shared sections resolved on their own (None when they
        are valid only with an arm's overrides)."""
        check_mapping(raw, ("arms",), "a mapping of arm names to their overrides, e.g. {ppo: {...}, grpo: {}}")
        if not raw:
            raise ConfigError(("arms",), "is empty; an experiment needs at least one arm, e.g. grpo: {}")
        overrides = {}
        for name, value in raw.items():
            path = ("arms", name)
            if not NAME.fullmatch(name):
                raise ConfigError(path, f"arm name {name!r} may use only letters, digits, '_', '.' and '-' (it "
                                        "names runs and folders)")
            overrides[name] = check_mapping({} if value is None else value, path)
            _check_arm_keys(overrides[name], path)
        try:
            base = resolve_arm("(shared)", shared, {}, context).resolved
        except ConfigError as exc:
            # A mistake in a shared key that no arm touches is every arm's: report it once, at its line.
            if not any(_declares(arm, exc.path) for arm in overrides.values()):
                raise
            base = None
        arms = {}
        for name, arm in overrides.items():
            try:
                arms[name] = resolve_arm(name, deep_merge(shared, arm), arm, context)
            except ConfigError as exc:
                raise _locate(name, arm, exc) from None
        return arms, base

    def _note_overrides(self, arms: dict[str, ArmConfig], base: dict | None) -> None:
        """Overrides that set what the shared sections already say, and arms that are the same arm."""
        for arm in arms.values():
            for key in arm.declared:
                value = get_path(arm.resolved, key)
                if base is not None and canonical(value) == canonical(get_path(base, key)):
                    self.notes.append(f"arm {arm.name!r} sets {dotted(key)} to {canonical(value)}, which it already "
                                      "is: the override changes nothing")
        seen: dict[str, str] = {}
        for arm in arms.values():
            digest = config_hash(arm.resolved)
            if digest in seen:
                self.notes.append(f"arms {seen[digest]!r} and {arm.name!r} resolve to the same configuration "
                                  f"({digest}); only their seeds' noise can tell them apart")
            seen.setdefault(digest, arm.name)

    def _note_model(self, model: ModelConfig, data: DataConfig, evaluation: EvaluationConfig,
                    arms: dict[str, ArmConfig]) -> None:
        from mlgrpo.models.loading import classify_spec
        from mlgrpo.models.settings import parse_options

        kind, options = classify_spec(model.policy)
        if kind == "tiny":
            tiny = parse_options(options)
            new = [code for code in data.languages if code not in tiny.languages]
            if new:
                self.notes.append(f"the tiny model was warm-started on {', '.join(tiny.languages)}; "
                                  f"{', '.join(new)} will be new to it")
            if data.suite is not None and data.suite != tiny.suite:
                self.notes.append(f"the tiny model was warm-started on suite {tiny.suite!r}, the data is "
                                  f"{data.suite!r}")
        for arm in arms.values():
            steps = arm.training.get("max_steps", -1)
            every = evaluation.every_steps
            if steps > 0 and every >= steps:
                self.notes.append(f"arm {arm.name!r}: evaluation.every_steps {every} >= max_steps {steps}: it is "
                                  "evaluated only before and after training")


@dataclasses.dataclass(frozen=True)
class _Context:
    """What an arm is checked against: the shared model and data, the records, where runs write."""

    model: ModelConfig
    data: DataConfig
    evaluation: EvaluationConfig
    records: list[dict]
    run: RunSettings
    seed: int
    # Reward configs already checked against the records (arms mostly share theirs; a check reads every row).
    checked: set = dataclasses.field(default_factory=set)


def resolve_arm(name: str, merged: Mapping, overrides: Mapping, context: _Context) -> ArmConfig:
    """One arm's typed configuration from its merged sections; ConfigError paths are in merged space."""
    from mlgrpo.sampling import SamplerConfig
    from mlgrpo.trainers.config import AlgorithmConfig, KLConfig, UpdateSchedule

    for path, why in MOVED.items():
        if get_path(merged, path) is not ABSENT:
            raise ConfigError(path, f"{path[-1]} cannot be set here: {why}")
    algorithm = build_dataclass(AlgorithmConfig, merged["algorithm"] or {}, ("algorithm",))
    kl = build_dataclass(KLConfig, merged["kl"] or {}, ("kl",))
    try:
        kl.check(algorithm.name)
    except UserError as exc:
        raise ConfigError(("kl",), f"{exc} (algorithm {algorithm.name})") from None
    update = build_dataclass(UpdateSchedule, merged["update"] or {}, ("update",))
    sampler = merged["sampler"]
    if sampler is not None:
        sampler = build_dataclass(SamplerConfig, sampler, ("sampler",), exclude=SAMPLER_EXCLUDED)
    rewards = parse_rewards(merged["rewards"])
    training = check_training(merged["training"], minibatches=update.minibatches)
    check_group_schedule(training, update, algorithm, sampler)
    check_ppo_engine(training, algorithm, context.run.gpus_per_run or 1)
    model = dataclasses.replace(context.model, lora=check_lora(check_mapping(merged["model"], ("model",)).get("lora")))
    _check_against_data(sampler, rewards, context)
    run_name = f"{name}-seed{context.seed}"
    try:
        args = build_grpo_config(trl_settings(training, update, kl, algorithm.name),
                                 str(Path(context.run.output_dir) / run_name), seed=context.seed, run_name=run_name)
    except UserError as exc:
        raise ConfigError(("training",), str(exc)) from None
    sampler_plain = None if sampler is None else {k: v for k, v in to_plain(sampler).items() if k != "seed"}
    resolved = {"model": to_plain(model), "data": to_plain(context.data), "algorithm": hashed_algorithm(algorithm),
                "kl": to_plain(kl), "update": hashed_update(update), "sampler": sampler_plain, "rewards": hashed_rewards(rewards),
                "training": to_plain(training), "evaluation": to_plain(context.evaluation)}
    effective = effective_view(algorithm, kl, update, sampler, rewards, model.lora, args)
    declared = tuple(leaf_paths(overrides))
    return ArmConfig(name, algorithm, sampler, rewards, training, model, update, kl, resolved, effective, declared)


def parse_rewards(raw: Any, path: tuple = ("rewards",)):
    """RewardConfig.from_dict, with kinds checked first and its errors placed at the reward's line."""
    from mlgrpo.rewards import RewardConfig

    check_mapping(raw, path, "a mapping with a list under `rewards:`, e.g. {rewards: [{name: exact_match}]}")
    items = raw.get("rewards")
    if isinstance(items, list):
        # RewardSpec's fields as YAML gives them; from_dict assumes these kinds (a numeric name would
        # reach difflib), so they are checked here, at the item's line.
        if "control" in raw:
            coerce(raw["control"], str, (*path, "control"))
        kinds = {"name": str, "weight": float, "label": str | None, "params": dict[str, Any],
                 "per_language": dict[str, dict[str, float]], "clip": dict[str, float]}
        for i, item in enumerate(items):
            for key, value in (item.items() if isinstance(item, Mapping) else ()):
                if key in kinds:
                    coerce(value, kinds[key], (*path, "rewards", i, key))
    try:
        return RewardConfig.from_dict(raw, where="rewards")
    except UserError as exc:
        match = _REWARD_ITEM.fullmatch(str(exc))
        if match:
            where = (*path, "rewards", int(match[1]))
            unknown = _UNKNOWN_KEY.match(match[2])  # point at the misspelt key's own line
            raise ConfigError((*where, unknown[1]) if unknown else where, match[2]) from None
        raise ConfigError(path, str(exc).removeprefix("rewards: ")) from None


def _check_against_data(sampler, rewards, context: _Context) -> None:
    from mlgrpo.rewards import check_requirements, get_reward

    languages = context.data.languages
    for i, spec in enumerate(rewards.rewards):
        for code in spec.per_language:
            if code not in languages:
                raise ConfigError(("rewards", "rewards", i, "per_language", code), f"{code!r} is not among the "
                                  f"experiment's languages ({', '.join(languages)}): the transform would never apply")
        entry = get_reward(spec.name)
        if entry.check is not None:
            try:
                entry.check(spec.params)
            except UserError as exc:
                raise ConfigError(("rewards", "rewards", i, "params"), str(exc)) from None
    for code in (sampler.oversample if sampler is not None else {}):
        if code not in languages:
            raise ConfigError(("sampler", "oversample", code), f"{code!r} is not among the experiment's languages "
                                                               f"({', '.join(languages)})")
    key = canonical(to_plain(rewards))
    if key not in context.checked:
        try:
            check_requirements(rewards, context.records, source="the data")
        except UserError as exc:
            raise ConfigError(("rewards",), str(exc)) from None
        context.checked.add(key)


def _check_arm_keys(overrides: Mapping, path: tuple) -> None:
    for key in overrides:
        if key in SHARED_ONLY:
            raise ConfigError((*path, key), f"an arm cannot change {key}: {SHARED_ONLY[key]}")
        if key not in ARM_SECTIONS:
            raise ConfigError((*path, key), f"unknown key {key!r} in an arm{closest(key, ARM_SECTIONS)}; an arm may "
                                            f"override only {', '.join(ARM_SECTIONS)}")
    model = overrides.get("model")
    if model is not None:
        for key in check_mapping(model, (*path, "model")):
            if key != "lora":
                raise ConfigError((*path, "model", key), "an arm may change only model.lora: the policy, its "
                                                         "tokenizer and dtype (the initial weights) are shared")


def _declares(overrides: Mapping, path: tuple) -> bool:
    """True when the overrides set `path`, or a section or mapping that holds it."""
    return any(get_path(overrides, path[:depth]) is not ABSENT for depth in range(1, len(path) + 1))


def _locate(arm: str, overrides: Mapping, exc: ConfigError) -> ConfigError:
    """Point an arm's error at the arm when it declared the key or its section, else at the shared section."""
    if _declares(overrides, exc.path):
        return ConfigError(("arms", arm, *exc.path), exc.reason)
    return ConfigError(exc.path, f"in arm {arm!r}: {exc.reason}")
