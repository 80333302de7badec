"""GRPO on TRL's rollout engine, with mlgrpo's advantages, sampler, reward guard and per-language metrics.

`MultilingualGRPOTrainer` subclasses trl.GRPOTrainer through TRLAdapter (trl_adapter.py) and changes only
where the algorithm or the language layer differs; generation, reward calls, the reference model, the
clipped loss, accelerate/DeepSpeed, PEFT and vLLM stay TRL's:

    rollout: TRL generates and scores (on_rewards: clipped rewards, and a BatchRows record of each row's
    prompt, language, lengths) -> compute_advantages from the registry replaces TRL's inline advantages,
    and TRL's logged advantage statistics -> per-language metrics -> one Rollout record; the step and the
    loss over it are mlgrpo's (step.py: the algorithms' loss registry, equal to TRL's loss)
    With algorithm.dynamic_sampling on, constant groups are replaced by fresh ones before the advantages
    (dynamic.py: DAPO's dynamic sampling). With a group schedule, each rollout is laid out and generated
    with its own group size (scheduled_groups.py).

With AdvantageConfig() (group by prompt, group std, ddof 1, eps 1e-4) and no sampler config the
advantages, hence the parameters, equal stock trl.GRPOTrainer's (tests/trainers checks both).

Two guarantees TRL does not give (issue 8): a run resumed from a checkpoint ends with the parameters of
the uninterrupted run (checkpoints.py: each checkpoint also holds what HF and TRL leave out); and an
optimiser step whose loss or gradient is non-finite is skipped and counted (guard.py), never applied.
The KL to the reference and the update schedule come in through TRL's GRPOConfig (beta,
steps_per_generation, num_iterations), built from KLConfig and UpdateSchedule (config.py); the trainer
refuses a GRPOConfig that disagrees with its KLConfig, and TRL settings whose job mlgrpo's advantages do.
TRL's private hooks reach this class's public methods through trl_adapter.py (on_rewards, rollout, loss,
train_sampler, save_state, load_state). Knows nothing about MLflow or YAML files: metrics go through
TRL's log(), read by callbacks.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future

import torch
from accelerate.utils import gather_object
from torch import Tensor
from trl.trainer.utils import RepeatSampler

from mlgrpo.algorithms import WEIGHTINGS, GroupKeys, InterGroupRows, compute_advantages, group_stats
from mlgrpo.algorithms.reward_clip import ColumnBounds, clip_rewards
from mlgrpo.errors import UserError
from mlgrpo.rewards import helper as consistency_helper
from mlgrpo.sampling import LanguageSampler, SamplerConfig
from mlgrpo.sampling.group_schedule import GroupSwitch, ScheduledGroupSampler
from mlgrpo.trainers.checkpoints import ResumableState
from mlgrpo.trainers.config import AlgorithmConfig, KLConfig
from mlgrpo.trainers.dynamic import RefillingRollouts
from mlgrpo.trainers.guard import NonfiniteStepGuard
from mlgrpo.trainers.scheduled_groups import ScheduledGroups
from mlgrpo.trainers.metrics import language_counts, peak_memory_mb, per_language, to_floats
from mlgrpo.trainers.rollout import ROW_COLUMN, BatchRows, Rollout, RolloutAdvantages, fields_of, prompt_text
from mlgrpo.trainers.step import TrainingStep
from mlgrpo.trainers.trl_adapter import EpochSeekingRepeatSampler, TRLAdapter, replace_advantage_logs

# TRL settings whose job mlgrpo's advantages (or step) do: a non-default value would be ignored, so it is refused.
REPLACED_TRL_SETTINGS = {
    "scale_rewards": ("group", "mlgrpo computes the advantages; set AlgorithmConfig.advantage.std_scope (group, "
                      "language, batch or none)"),
    "multi_objective_aggregation": ("sum_then_normalize", "mlgrpo computes the advantages; for a baseline per reward "
                                    "function (TRL's normalize_then_sum) set AlgorithmConfig.advantage.objective_weights"),
    "use_adaptive_entropy": (False, "mlgrpo's step applies a constant entropy_coef; set entropy_coef instead"),
}
# Longest wait at a log for the helper's language consistency (normally answered before the step ends;
# loading 75 languages' models first takes ~10 s).
CONSISTENCY_TIMEOUT_S = 300.0

log = logging.getLogger(__name__)


class MultilingualGRPOTrainer(TrainingStep, ResumableState, NonfiniteStepGuard, RefillingRollouts, ScheduledGroups,
                              TRLAdapter):
    """trl.GRPOTrainer with registry advantages, a language-aware sampler and per-language metrics.

    algorithm:        AlgorithmConfig (name "grpo"); the estimator and grouping come from its registry; with
                      dynamic_sampling on, constant groups are replaced by fresh ones (dynamic.py).
    kl:               KLConfig; its coefficient must equal GRPOConfig.beta when the KL sits in the loss,
                      and beta must be 0 otherwise (KLConfig.trl_beta gives the value). None: no KL.
    sampler:          SamplerConfig for LanguageSampler; None keeps TRL's RepeatSampler (compatibility).
    reward_guard:     the RewardGuard that wraps the reward functions, so its counts are logged.
    reward_clip:      one RewardClip (or None) per reward function: bounds on its values in training
                      (algorithms.reward_clip), applied to the gathered batch before anything reads it.
    language_column:  the dataset column with each row's ISO 639-1 code.
    group_schedule:   GroupSwitch entries (optimiser step -> group size) after GRPOConfig.num_generations, the
                      size of the first rollouts; each rollout draws its own size, as many completions
                      (sampling/group_schedule.py). Empty: num_generations throughout.
    reference_model:  a frozen copy of the initial policy made by the caller (who also measures the
                      evaluation's KL with it), used where the trainer needs one and TRL has none (PPO's
                      KL in the reward), so that a run holds one copy; None: the trainer copies if needed.
    Every other argument is trl.GRPOTrainer's.
    """

    def __init__(
        self,
        *args,
        algorithm: AlgorithmConfig | None = None,
        kl: KLConfig | None = None,
        sampler: SamplerConfig | None = None,
        reward_guard=None,
        reward_clip=None,
        language_column: str = "language",
        group_schedule: tuple[GroupSwitch, ...] = (),
        reference_model=None,
        **kwargs,
    ) -> None:
        self.algorithm = algorithm or AlgorithmConfig()
        self.kl = kl or KLConfig()
        self.kl.check(self.algorithm.name)
        self.sampler_config = sampler
        self.reward_guard = reward_guard
        self._reward_bounds = [None if c is None else ColumnBounds(c.min, c.max, c.lower_quantile, c.upper_quantile)
                               for c in reward_clip or ()]
        self.language_column = language_column
        self.group_schedule = tuple(group_schedule)
        self.reference_model = reference_model
        self._scheduled_sampler: ScheduledGroupSampler | None = None
        self._language_sampler: LanguageSampler | None = None
        self._repeat_sampler: EpochSeekingRepeatSampler | None = None  # TRL's order, without a sampler config
        self._last_generation: float | None = None
        self._pending_consistency: list[tuple[str, Future, int, Tensor, list[str]]] = []
        self._consistency_failures = 0
        if sampler is not None and sampler.reward_buckets > 0 and kwargs.get("train_dataset") is not None:
            data = kwargs["train_dataset"]
            if ROW_COLUMN not in data.column_names:
                kwargs["train_dataset"] = data.add_column(ROW_COLUMN, list(range(len(data))))
        trl_args = kwargs.get("args", args[2] if len(args) > 2 else None)
        if trl_args is not None:  # before TRL builds a reference model for a beta that may be refused
            self._check_trl_settings(trl_args)
        super().__init__(*args, **kwargs)
        self._check_dataset(self.train_dataset)
        self._check_batch_layout()
        self._check_group_schedule()
        self._candidates = tuple(sorted(set(self.train_dataset[language_column]) - {"und"}))
        if self._candidates:  # the identifier's models, loaded in the helper while training starts
            consistency_helper.service().load(self._candidates)

    # ---- settings and data order ---------------------------------------------------------------------

    def _check_trl_settings(self, args) -> None:
        """TRL's beta agrees with the KLConfig (a KL counted twice, or never, is refused), and the TRL
        settings that mlgrpo's advantages replace are at their defaults."""
        for name, (default, instead) in REPLACED_TRL_SETTINGS.items():
            if getattr(args, name) != default:
                raise UserError(f"GRPOConfig.{name}={getattr(args, name)!r} would be ignored: {instead}")
        beta, where, coef = args.beta, self.kl.placed(self.algorithm.name), self.kl.coef
        if where == "reward" and beta != 0:
            raise UserError(f"the KL would be counted twice: kl.coef={coef} in the reward and GRPOConfig.beta={beta} "
                            "in the loss; build the GRPOConfig with beta=KLConfig.trl_beta(...) (0 here)")
        if where != "reward" and beta != self.kl.trl_beta(self.algorithm.name):
            raise UserError(f"GRPOConfig.beta={beta} but kl.coef={coef} ({where}): the KL would be applied at "
                            f"{beta}, not at the declared coefficient; set KLConfig(coef={beta}) or beta={coef}")

    def _check_dataset(self, dataset) -> None:
        if dataset is None or not hasattr(dataset, "column_names"):
            return
        if self.language_column not in dataset.column_names:
            raise UserError(
                f"the training data has no {self.language_column!r} column (columns: "
                f"{', '.join(dataset.column_names)}); prepare it with `mlgrpo data prepare`"
            )

    def _check_batch_layout(self) -> None:
        """With several processes, each rank's share of a generation batch must hold whole groups, so that
        the language sampler's shard of the global order never splits a group (TRL alone allows it)."""
        if self.sampler_config is None or self.accelerator.num_processes == 1:
            return
        per_rank = self.args.per_device_train_batch_size * self.args.steps_per_generation
        if per_rank % self.num_generations:
            raise UserError(
                f"per_device_train_batch_size x steps_per_generation = {per_rank} is not a multiple of "
                f"num_generations = {self.num_generations}: a prompt's group would be split across processes"
            )

    def train_sampler(self, dataset=None):
        if self.group_schedule:
            return self._scheduled_train_sampler(self.train_dataset if dataset is None else dataset)
        if self.sampler_config is None:
            trl_sampler = self.trl_train_sampler(dataset)
            if type(trl_sampler) is not RepeatSampler:
                return trl_sampler
            self._repeat_sampler = EpochSeekingRepeatSampler(
                trl_sampler.data_source, trl_sampler.mini_repeat_count, trl_sampler.batch_size,
                trl_sampler.repeat_count, trl_sampler.shuffle, trl_sampler.seed,
            )
            return self._repeat_sampler
        dataset = self.train_dataset if dataset is None else dataset
        self._language_sampler = LanguageSampler(
            dataset[self.language_column],
            self.sampler_config,
            mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
        )
        return self._language_sampler

    # ---- rewards and advantages -------------------------------------------------------------------

    def on_rewards(self, inputs, prompts, completions, completion_ids_list,
                   rewards_per_func: Tensor) -> tuple[Tensor, BatchRows]:
        rewards_per_func, clip_metrics = self._clip_rewards(rewards_per_func)  # TRL's reward logs see these too
        rows = BatchRows(
            prompts=gather_object([prompt_text(p) for p in prompts]),
            languages=gather_object([str(x.get(self.language_column) or "und") for x in inputs]),
            dataset_rows=gather_object([int(x[ROW_COLUMN]) for x in inputs]) if ROW_COLUMN in inputs[0] else None,
            completion_lengths=gather_object([len(ids) for ids in completion_ids_list]),
            consistency=self._consistency(prompts, completions, inputs),
            rewards_per_func=rewards_per_func,
            clip_metrics=clip_metrics,
        )
        return rewards_per_func, rows

    def _clip_rewards(self, rewards_per_func: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """The gathered (N, F) rewards with each function's bounds applied, and what was clipped; unchanged
        without bounds. Every process clips the same gathered batch, so quantile bounds agree across ranks."""
        if not any(self._reward_bounds):
            return rewards_per_func, {}
        if len(self._reward_bounds) != rewards_per_func.shape[1]:
            raise UserError(f"reward_clip has {len(self._reward_bounds)} entries for {rewards_per_func.shape[1]} "
                            "reward functions; give one (or None) per function")
        raw_means = rewards_per_func.nanmean(0)
        out = clip_rewards(rewards_per_func, self._reward_bounds)
        metrics = {}
        for f, name in enumerate(self.reward_func_names):
            if self._reward_bounds[f] is not None:
                metrics.update({f"rewards/{name}/raw_mean": raw_means[f], f"rewards/{name}/clip_low": out.low[f],
                                f"rewards/{name}/clip_high": out.high[f], f"rewards/{name}/clipped_low": out.clipped_low[f],
                                f"rewards/{name}/clipped_high": out.clipped_high[f]})
        return out.rewards, metrics

    def _consistency(self, prompts, completions, inputs) -> Future:
        """Language consistency of each completion (DeepSeek-R1's language-consistency measure), logged
        per language whether or not it is also a reward.

        Measured on every generation batch, so that each log that averages a window's rewards averages the
        same rollouts' consistency (issue 25: measured on the batches generated at a logging step only, it
        reached 13 of the quickstart's 50 reward logs, rollouts and logs being 4 and 5 steps apart). In a
        helper process (rewards/helper.py): it costs language ID per segment (~15 ms for 64 short
        completions in 50 languages on one CPU core, bench/bench_load.py), which the helper spends while
        the step goes on. `log` collects the result, so the value lands in its window's log."""
        languages = [x.get(self.language_column) for x in inputs]
        return consistency_helper.service().measure(prompts, completions, languages, self._candidates or None)

    def rollout(self, inputs) -> Rollout:
        # Throughput is end to end: completions per wall second since the previous generation, which
        # covers generation, scoring and the optimiser steps in between (the first call: generation only).
        started = self._last_generation or time.perf_counter()
        output, rows = self.trl_rollout(inputs)
        mode = "train" if self.model.training else "eval"
        generated, dynamic_metrics = [rows], {}
        if mode == "train" and self.algorithm.dynamic_sampling.enabled:  # constant groups out, fresh ones in
            output, rows, dynamic_metrics, generated = self._refill(inputs, output, rows, self.trl_rollout)
        keys = self._group_keys(rows, mode, output)
        local = slice(self.accelerator.process_index * len(inputs), (self.accelerator.process_index + 1) * len(inputs))
        rewards = self._combined_rewards(rows.rewards_per_func)
        result = self._advantages(rewards, keys, output, local)
        metrics = result.metrics
        scalar = rewards if rewards.dim() == 1 else self._objective_total(rewards)
        # TRL logged the statistics of its own advantages; these are the ones trained on.
        reward_std = group_stats(scalar, torch.zeros_like(keys.prompt_ids)).std[0]  # the batch's, ddof 1, as TRL
        replace_advantage_logs(self, mode, result.per_row.tolist(), reward_std, metrics["adv/frac_zero_std"])
        metrics.update(self._language_metrics(rows, scalar, keys))
        if rows.consistency is not None:  # measured in the background; `log` adds it to this window's metrics
            self._pending_consistency.append((mode, rows.consistency, len(inputs), keys.lang_ids, keys.languages))
        if mode == "train":
            for batch in generated:  # dropped groups too: their rewards say as much about their prompts
                self._feed_sampler(batch)
        now = time.perf_counter()
        self._record(mode, metrics | dynamic_metrics, rows, now - started)
        if mode == "train":
            self._last_generation = now
        regularizer = result.regularizer_rows
        return Rollout.from_trl(
            output, rows.languages[local], advantages=result.local, rewards=rows.rewards_per_func[local],
            group_ids=keys.prompt_ids[local], old_values=result.old_values, returns=result.returns,
            value_mask=result.value_mask,
            regularizer=None if regularizer is None else InterGroupRows(
                **{name: column[local] for name, column in fields_of(regularizer).items()}))

    def _feed_sampler(self, rows: BatchRows) -> None:
        """The batch's rewards to the reward-stratified language sampler. Every rank calls this with the same
        gathered values, so their sample orders stay equal."""
        if self._language_sampler is None or rows.dataset_rows is None:
            return
        rewards = self._combined_rewards(rows.rewards_per_func)
        host = (rewards if rewards.dim() == 1 else self._objective_total(rewards)).float().cpu()
        finite = torch.isfinite(host)  # an unscored completion says nothing about its prompt
        indices = torch.tensor(rows.dataset_rows)[finite]
        self._language_sampler.update_rewards(indices.numpy(), host[finite].numpy())

    def _group_keys(self, rows: BatchRows, mode: str, output: dict) -> GroupKeys:
        """The gathered rows' keys; `output` is TRL's batch of this process's rows (prompt tokens)."""
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        return GroupKeys.from_rows(
            rows.prompts,
            rows.languages,
            group_size=group_size,
            lengths=self.accelerator.gather(output["prompt_mask"].sum(1)).tolist(),
            completion_lengths=rows.completion_lengths,
            device=self.accelerator.device,
        )

    def _combined_rewards(self, rewards_per_func: Tensor) -> Tensor:
        """(N,) the reward-weighted sum as TRL forms it (weighting.any_scored); or the (N, F) columns when
        the advantage config gives each objective its own baseline."""
        if self.algorithm.advantage.objective_weights is not None:
            return rewards_per_func
        return WEIGHTINGS.get("any_scored")(rewards_per_func, self.reward_weights)

    def _objective_total(self, columns: Tensor) -> Tensor:
        """(N,) the objectives' weighted total, NaN where one is missing (weighting.all_scored)."""
        return WEIGHTINGS.get("all_scored")(columns, self.algorithm.advantage.objective_weights)

    def _advantages(self, rewards: Tensor, keys: GroupKeys, output: dict, local: slice) -> RolloutAdvantages:
        """The registry's advantages for this process's rows (PPO overrides this with its critic)."""
        result = compute_advantages(
            rewards, keys, self.algorithm.advantage, step=self.state.global_step, total_steps=max(1, self.state.max_steps)
        )
        return RolloutAdvantages(result.advantages[local], result.advantages, dict(result.metrics),
                                 result.regularizer_rows)

    def _language_metrics(self, rows: BatchRows, scalar: Tensor, keys: GroupKeys) -> dict[str, Tensor]:
        metrics = per_language(scalar, keys.lang_ids, keys.languages, "reward")
        for i, name in enumerate(self.reward_func_names):
            metrics.update(per_language(rows.rewards_per_func[:, i], keys.lang_ids, keys.languages, f"rewards/{name}"))
        lengths = keys.completion_lengths.to(scalar.dtype) if keys.completion_lengths is not None else None
        if lengths is not None:
            metrics.update(per_language(lengths, keys.lang_ids, keys.languages, "completion_length"))
        metrics.update(language_counts(keys.lang_ids, keys.languages))
        # Group sizes as the grouping saw them (prompt groups; TRL's layout makes them G unless the
        # grouping pools prompts).
        sizes = group_stats(scalar, keys.prompt_ids, 0).count
        metrics["groups/mean_size"] = sizes.mean()
        metrics.update(rows.clip_metrics)  # bounds and clipped shares of the functions with reward_clip
        return metrics

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        self._collect_consistency()
        super().log(logs, start_time)

    def _collect_consistency(self) -> None:
        """Per-language language consistency of the batches measured since the last log, into the metrics
        that log averages. Every process calls log at the same step, so the gathers pair up."""
        pending, self._pending_consistency = self._pending_consistency, []
        for mode, future, local_rows, lang_ids, languages in pending:
            try:
                local = future.result(timeout=CONSISTENCY_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - a monitoring metric never stops (or stalls) training
                self._consistency_failures += 1
                log.warning("language consistency of step %d not measured (%s); training goes on (%d batches "
                            "unmeasured so far)", self.state.global_step, exc, self._consistency_failures)
                local = [None] * local_rows  # still gathered: every process takes part in the gather
            values = gather_object(local)
            consistency = torch.tensor([float("nan") if c is None else c for c in values], device=lang_ids.device)
            for name, value in to_floats(per_language(consistency, lang_ids, languages, "language_consistency")).items():
                self.record_metric(mode, name, value)

    def _record(self, mode: str, metrics: dict[str, Tensor], rows: BatchRows, seconds: float) -> None:
        values = to_floats(metrics)
        if self.reward_guard is not None:  # counts of this generation batch, then start again
            values.update({k: float(v) for k, v in self.reward_guard.metrics().items()})
            self.reward_guard.reset()
        n = len(rows.prompts)
        tokens = sum(rows.completion_lengths)
        values["system/samples_per_sec"] = n / max(seconds, 1e-9)
        values["system/tokens_per_sec"] = tokens / max(seconds, 1e-9)
        values["system/peak_memory_mb"] = peak_memory_mb(self.accelerator.device)
        if mode == "train" and self.group_schedule:
            values["group_size"] = float(self.num_generations)
        sampler = self._language_sampler or getattr(self._scheduled_sampler, "stream", None)
        if isinstance(sampler, LanguageSampler):
            for lang, count in sampler.language_counts().items():
                values[f"sampler/drawn/{lang}"] = float(count)
        for name, value in values.items():
            self.record_metric(mode, name, value)
