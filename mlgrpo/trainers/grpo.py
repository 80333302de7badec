"""GRPO on TRL's rollout engine, with mlgrpo's advantages, sampler, reward guard and per-language metrics.

`MultilingualGRPOTrainer` subclasses trl.GRPOTrainer and changes only where the algorithm or the
language layer differs; generation, reward calls, the reference model, the clipped loss,
accelerate/DeepSpeed, PEFT and vLLM stay TRL's:

    TRL generates and scores -> _calculate_rewards (ours: also gathers each row's prompt, language,
    length) -> _generate_and_score_completions (ours: compute_advantages from the registry replaces
    TRL's inline advantages; per-language metrics) -> TRL's loss (+ the inter-group regulariser)

With AdvantageConfig() (group by prompt, group std, ddof 1, eps 1e-4) and no sampler config the
advantages, hence the parameters, equal stock trl.GRPOTrainer's (tests/trainers checks both).

Two guarantees TRL does not give (issue 8): a run resumed from a checkpoint ends with the parameters of
the uninterrupted run (each checkpoint also holds what HF and TRL leave out: the sampler's history,
TRL's step counter and, between generations, its buffered rollouts); and an optimiser step whose loss
or gradient is non-finite is skipped and counted (guard.py), never applied.
Knows nothing about MLflow or YAML files: metrics go through TRL's log(), read by callbacks.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import torch
from accelerate.utils import gather_object
from torch import Tensor
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import GRPOTrainer
from trl.trainer.utils import RepeatSampler

from mlgrpo.algorithms import GROUP_KEYS, GroupKeys, compute_advantages, group_stats
from mlgrpo.errors import UserError
from mlgrpo.rewards import helper as consistency_helper
from mlgrpo.sampling import LanguageSampler, SamplerConfig
from mlgrpo.trainers.config import AlgorithmConfig
from mlgrpo.trainers.guard import NONFINITE_STEPS, NonfiniteStepGuard
from mlgrpo.trainers.metrics import language_counts, peak_memory_mb, per_language, to_floats

GROUP_COLUMN = "mlgrpo_group"  # (B,) int64 per local row, added to the batch for the inter-group term
ROW_COLUMN = "mlgrpo_row"  # dataset row index, added when the sampler stratifies by earlier rewards
EXTRA_STATE = "mlgrpo_state_rank{rank}.pt"  # per process, in every checkpoint: see _extra_state
# Longest wait at a log for the helper's language consistency (normally answered before the step ends;
# loading 75 languages' models first takes ~10 s).
CONSISTENCY_TIMEOUT_S = 300.0

log = logging.getLogger(__name__)


@dataclass
class BatchRows:
    """What the gathered batch knows about its rows (all processes, TRL's order)."""

    prompts: list[str]
    languages: list[str]
    dataset_rows: list[int] | None  # dataset index of each row, when the sampler needs rewards per row
    completion_lengths: list[int]
    # Share of each of this process's completions in its row's language (None: no letters), being measured
    # in the background; None on the generation batches that no log reads (see _consistency).
    consistency: Future | None
    rewards_per_func: Tensor  # (N, F) raw reward of each function, NaN where it returned None


def complete_checkpoint(folder: str | os.PathLike) -> bool:
    """True when `folder` is a checkpoint this trainer finished writing: HF's files, then (last) mlgrpo's
    state file of the main process. A run killed while saving leaves a folder without it."""
    return os.path.isfile(os.path.join(folder, EXTRA_STATE.format(rank=0)))


class EpochSeekingRepeatSampler(RepeatSampler):
    """TRL's RepeatSampler, same orders, that can start at any epoch.

    TRL draws epoch e's order as the e-th permutation of one generator seeded once. HF's Trainer, resuming
    inside epoch e >= 1, iterates none of the epochs before it, and does not reach the sampler's set_epoch
    through the loader that skips the trained batches: TRL's own sampler would then draw epoch 0's order
    again (measured: parameters 2.5e-4 to 9.4e-4 apart from the uninterrupted run after 1-2 more steps).
    set_epoch(e) seeds again and draws the e permutations before, so epoch e's order comes from any start.
    """

    def set_epoch(self, epoch: int) -> None:
        if self.shuffle and self.seed is not None:
            self.generator.manual_seed(self.seed)
            for _ in range(epoch):
                torch.randperm(self.num_samples, generator=self.generator)


class MultilingualGRPOTrainer(NonfiniteStepGuard, GRPOTrainer):
    """trl.GRPOTrainer with registry advantages, a language-aware sampler and per-language metrics.

    algorithm:        AlgorithmConfig (name "grpo"); the estimator and grouping come from its registry.
    sampler:          SamplerConfig for LanguageSampler; None keeps TRL's RepeatSampler (compatibility).
    reward_guard:     the RewardGuard that wraps the reward functions, so its counts are logged.
    language_column:  the dataset column with each row's ISO 639-1 code.
    Every other argument is trl.GRPOTrainer's.
    """

    def __init__(
        self,
        *args,
        algorithm: AlgorithmConfig | None = None,
        sampler: SamplerConfig | None = None,
        reward_guard=None,
        language_column: str = "language",
        **kwargs,
    ) -> None:
        self.algorithm = algorithm or AlgorithmConfig()
        self.sampler_config = sampler
        self.reward_guard = reward_guard
        self.language_column = language_column
        self._rows: BatchRows | None = None
        self._language_sampler: LanguageSampler | None = None
        self._repeat_sampler: EpochSeekingRepeatSampler | None = None  # TRL's order, without a sampler config
        self._last_generation: float | None = None
        self._pending_consistency: list[tuple[str, Future, int, Tensor, list[str]]] = []
        self._consistency_failures = 0
        if sampler is not None and sampler.reward_buckets > 0 and kwargs.get("train_dataset") is not None:
            data = kwargs["train_dataset"]
            if ROW_COLUMN not in data.column_names:
                kwargs["train_dataset"] = data.add_column(ROW_COLUMN, list(range(len(data))))
        super().__init__(*args, **kwargs)
        self._check_dataset(self.train_dataset)
        self._check_batch_layout()
        self._candidates = tuple(sorted(set(self.train_dataset[language_column]) - {"und"}))
        if self._candidates:  # the identifier's models, loaded in the helper while training starts
            consistency_helper.service().load(self._candidates)

    # ---- data order -------------------------------------------------------------------------------

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

    def _get_train_sampler(self, dataset=None):
        if self.sampler_config is None:
            trl_sampler = super()._get_train_sampler(dataset)
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

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._rows = BatchRows(
            prompts=gather_object([_prompt_text(p) for p in prompts]),
            languages=gather_object([str(x.get(self.language_column) or "und") for x in inputs]),
            dataset_rows=gather_object([int(x[ROW_COLUMN]) for x in inputs]) if ROW_COLUMN in inputs[0] else None,
            completion_lengths=gather_object([len(ids) for ids in completion_ids_list]),
            consistency=self._consistency(prompts, completions, inputs),
            rewards_per_func=rewards_per_func,
        )
        return rewards_per_func

    def _consistency(self, prompts, completions, inputs) -> Future | None:
        """Language consistency of each completion (DeepSeek-R1's language-consistency measure), logged
        per language whether or not it is also a reward, or None on batches no log reads.

        Measured on the generation batches of logging steps only (the batches in between would only be
        averaged into the logged value), and in a helper process (rewards/helper.py): it costs language ID
        per segment (~15 ms for 64 short completions in 50 languages on one CPU core, bench/bench_load.py),
        which the helper spends while the step goes on. `log` collects the result, so the value still
        lands in its step's log."""
        if not self._is_logging_step():
            return None
        languages = [x.get(self.language_column) for x in inputs]
        return consistency_helper.service().measure(prompts, completions, languages, self._candidates or None)

    def _is_logging_step(self) -> bool:
        """True when the step being generated for ends a logging window (TRL logs every logging_steps)."""
        every = self.args.logging_steps
        if not every or every <= 0:
            return True
        every = int(every) if every >= 1 else max(1, int(every * max(1, self.state.max_steps)))
        return (self.state.global_step + 1) % every == 0 or self.state.global_step == 0

    def _generate_and_score_completions(self, inputs):
        # Throughput is end to end: completions per wall second since the previous generation, which
        # covers generation, scoring and the optimiser steps in between (the first call: generation only).
        started = self._last_generation or time.perf_counter()
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        rows, self._rows = self._rows, None
        keys = self._group_keys(rows, mode)
        local = slice(self.accelerator.process_index * len(inputs), (self.accelerator.process_index + 1) * len(inputs))
        rewards = self._combined_rewards(rows.rewards_per_func)
        advantages, metrics = self._advantages(rewards, keys, output, local)
        output["advantages"] = advantages
        if self.algorithm.advantage.inter_group_coef > 0:
            group_key = GROUP_KEYS.get(self.algorithm.advantage.group_by)
            output[GROUP_COLUMN] = group_key(keys, self.algorithm.advantage.grouping)[local]
        metrics.update(self._language_metrics(rows, rewards, keys))
        if rows.consistency is not None:  # measured in the background; `log` adds it to this window's metrics
            self._pending_consistency.append((mode, rows.consistency, len(inputs), keys.lang_ids, keys.languages))
        if mode == "train" and self._language_sampler is not None and rows.dataset_rows is not None:
            # Every rank calls this with the same gathered values, so their sample orders stay equal.
            scalar = (rewards if rewards.dim() == 1 else self._combined_rewards_from_columns(rewards)).float().cpu()
            finite = torch.isfinite(scalar)  # an unscored completion says nothing about its prompt
            indices = torch.tensor(rows.dataset_rows)[finite]
            self._language_sampler.update_rewards(indices.numpy(), scalar[finite].numpy())
        now = time.perf_counter()
        self._record(mode, metrics, rows, now - started)
        if mode == "train":
            self._last_generation = now
        return output

    def _group_keys(self, rows: BatchRows, mode: str) -> GroupKeys:
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        return GroupKeys.from_rows(
            rows.prompts,
            rows.languages,
            group_size=group_size,
            lengths=rows.completion_lengths,
            device=self.accelerator.device,
        )

    def _combined_rewards(self, rewards_per_func: Tensor) -> Tensor:
        """(N,) weighted sum as TRL forms it (nansum), NaN where every function returned None; or the
        (N, F) columns when the advantage config gives each objective its own baseline."""
        if self.algorithm.advantage.objective_weights is not None:
            return rewards_per_func
        weights = self.reward_weights.to(rewards_per_func.device)
        rewards = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
        return rewards.masked_fill(torch.isnan(rewards_per_func).all(dim=1), float("nan"))

    def _advantages(self, rewards: Tensor, keys: GroupKeys, output: dict, local: slice) -> tuple[Tensor, dict]:
        """The registry's advantages for this process's rows (PPO overrides this with its critic)."""
        result = compute_advantages(
            rewards, keys, self.algorithm.advantage, step=self.state.global_step, total_steps=max(1, self.state.max_steps)
        )
        return result.advantages[local], dict(result.metrics)

    def _language_metrics(self, rows: BatchRows, rewards: Tensor, keys: GroupKeys) -> dict[str, Tensor]:
        scalar = rewards if rewards.dim() == 1 else self._combined_rewards_from_columns(rewards)
        metrics = per_language(scalar, keys.lang_ids, keys.languages, "reward")
        for i, name in enumerate(self.reward_func_names):
            metrics.update(per_language(rows.rewards_per_func[:, i], keys.lang_ids, keys.languages, f"rewards/{name}"))
        lengths = keys.lengths.to(scalar.dtype) if keys.lengths is not None else None
        if lengths is not None:
            metrics.update(per_language(lengths, keys.lang_ids, keys.languages, "completion_length"))
        metrics.update(language_counts(keys.lang_ids, keys.languages))
        # Group sizes as the grouping saw them (prompt groups; TRL's layout makes them G unless the
        # grouping pools prompts).
        sizes = group_stats(scalar, keys.prompt_ids, 0).count
        metrics["groups/mean_size"] = sizes.mean()
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
                self._metrics[mode][name].append(value)

    def _combined_rewards_from_columns(self, columns: Tensor) -> Tensor:
        weights = torch.tensor(self.algorithm.advantage.objective_weights, dtype=columns.dtype, device=columns.device)
        return (columns * weights).sum(dim=1)

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
        if self._language_sampler is not None:
            for lang, count in self._language_sampler.language_counts().items():
                values[f"sampler/drawn/{lang}"] = float(count)
        for name, value in values.items():
            self._metrics[mode][name].append(value)

    # ---- loss ---------------------------------------------------------------------------------------

    def _compute_loss(self, model, inputs):
        loss = super()._compute_loss(model, inputs)
        coef = self.algorithm.advantage.inter_group_coef
        if coef > 0 and GROUP_COLUMN in inputs:
            loss = loss + coef * self._inter_group_term(model, inputs)
        return loss

    def _inter_group_term(self, model, inputs) -> Tensor:
        """Variance over groups of the group-mean surrogate ratio * A (the method notes' inter-group
        regulariser, var(mean(group_adv))). At ratio 1 it equals the variance of the group-mean
        advantages; written with the ratio it has a gradient, so the term can act on the policy."""
        prompt_ids, completion_ids = inputs["prompt_ids"], inputs["completion_ids"]
        mask = inputs["completion_mask"]
        ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention = torch.cat([inputs["prompt_mask"], mask], dim=1)
        logps, _, _ = self._get_per_token_logps_and_entropies(model, ids, attention, completion_ids.size(1))
        old = inputs.get("old_per_token_logps")
        old = logps.detach() if old is None else old
        seq_log_ratio = ((logps - old) * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        advantages = inputs["advantages"]
        per_row = torch.exp(seq_log_ratio) * (advantages if advantages.dim() == 1 else advantages.mean(-1))
        stats = group_stats(per_row, inputs[GROUP_COLUMN], 0)
        table = stats.table
        live = table.count > 0
        means = torch.where(live, table.mean, 0.0)
        n = live.sum().clamp(min=1)
        centre = means.sum() / n
        return (torch.where(live, (means - centre) ** 2, 0.0)).sum() / n

    # ---- checkpoints ------------------------------------------------------------------------------------

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
        os.makedirs(folder, exist_ok=True)  # every process writes its own file, as HF's RNG states
        path = os.path.join(folder, EXTRA_STATE.format(rank=self.accelerator.process_index))
        torch.save(self._extra_state(), path + ".tmp")
        # Written last and atomically: its presence marks a finished checkpoint (see complete_checkpoint).
        os.replace(path + ".tmp", path)

    def _extra_state(self) -> dict:
        """What resuming needs beyond HF's checkpoint (weights, optimiser, scheduler, RNG, trainer state).

        trl_step, buffered_inputs: TRL counts micro-steps from 0 again and generates anew when its buffer
            is empty, so a checkpoint taken while a generation is still being reused (steps_per_generation
            above gradient_accumulation_steps, or num_iterations > 1) would resume with new rollouts from
            newer weights. The buffer is this process's share, saved only then.
        sampler: the language sampler's history (draw counts, rewards, the epoch in progress), on which its
            next draws depend; HF's skipping of trained batches cannot rebuild it (sampling/sampler.py).
        nonfinite_loss_steps: the running count of skipped steps.
        """
        generate_every = self.args.steps_per_generation * self.num_iterations
        sampler = None if self._language_sampler is None else self._language_sampler.state_dict()
        return {
            "processes": self.accelerator.num_processes,
            "trl_step": self._step,
            "buffered_inputs": self._buffered_inputs if self._step % generate_every else None,
            "sampler": None if sampler is None else {k: _to_torch(v) for k, v in sampler.items()},
            NONFINITE_STEPS: self._nonfinite_steps,
        }

    def _load_optimizer_and_scheduler(self, checkpoint):
        # HF calls this once when resuming, after building the data loader (so the sampler exists); TRL
        # restores its own extra state here too.
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None:
            return
        if self._repeat_sampler is not None:  # the epoch HF resumes in (it skips to it without set_epoch)
            self._repeat_sampler.set_epoch(int(self.state.epoch))
        path = os.path.join(checkpoint, EXTRA_STATE.format(rank=self.accelerator.process_index))
        if not os.path.exists(path):
            log.warning("checkpoint %s has no %s (written by an older mlgrpo or by fewer processes): the run resumes, "
                        "but its prompt order and next rollouts can differ from an uninterrupted run's", checkpoint,
                        os.path.basename(path))
            return
        state = torch.load(path, weights_only=True, map_location="cpu")
        self._step, self._nonfinite_steps = state["trl_step"], state[NONFINITE_STEPS]
        if state["processes"] != self.accelerator.num_processes:
            log.warning("checkpoint %s was written by %d processes, this run has %d: rollouts buffered at the "
                        "checkpoint are dropped and generated again", checkpoint, state["processes"],
                        self.accelerator.num_processes)
        elif state["buffered_inputs"] is not None:
            device = self.accelerator.device
            self._buffered_inputs = [{k: v.to(device) if isinstance(v, Tensor) else v for k, v in batch.items()}
                                     for batch in state["buffered_inputs"]]
        if self._language_sampler is not None:
            if state["sampler"] is None:
                raise UserError(f"checkpoint {checkpoint} was written without the language sampler; resume with the "
                                "sampler settings the run started with")
            self._language_sampler.load_state_dict({k: _to_numpy(v) for k, v in state["sampler"].items()})


def _prompt_text(prompt) -> str:
    """A prompt as text for hashing and grouping: plain text, or the last user message of a conversation."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        content = prompt[-1].get("content", "")
        return content if isinstance(content, str) else str(content)
    return str(prompt)


def _to_torch(value):
    # torch.load(weights_only=True) reads tensors, not numpy arrays.
    return torch.from_numpy(value) if isinstance(value, np.ndarray) else value


def _to_numpy(value):
    return value.numpy() if isinstance(value, Tensor) else value
