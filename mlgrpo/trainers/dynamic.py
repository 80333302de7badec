"""DAPO's dynamic sampling in MultilingualGRPOTrainer: constant groups dropped, the rollout refilled.

    rollout generated and scored (TRL + ours) -> constant_groups on the gathered rewards, by the arm's
      prompt groups (every process reads the same gathered values, so all reach the same decision)
      -> while the rollout lacks informative groups and rounds remain: a generation batch of fresh
         prompts, generated and scored the same way
      -> select_groups over all rounds' groups in the gathered order: the first informative ones, then
         (rounds spent) the earliest constant ones -> TRL's batch of the chosen rows, gathered from every
         process and padded to common widths, each process keeping its share of the usual size
      -> its advantages are then computed as for any rollout

The choice is made on the gathered batch, so it is the one a single process makes: N processes train on
the rollout one process would (rows move between processes through the gather, only when a round was
added). Fresh prompts come from a refill stream: a sampler of the same kind and settings as the run's
(the language sampler's shares, or TRL's shuffled order), seeded apart (seed + REFILL_SEED_OFFSET): the
order the Trainer reads is untouched, and resuming replays the stream to its saved position.

Logged per rollout: dynamic/rounds (refill rounds), dynamic/prompts_generated/<lang> (groups generated, the
first round's included), dynamic/dropped_groups/<lang> (constant, not trained on),
dynamic/readmitted_groups/<lang> (constant, trained on to fill the rollout), dynamic/surplus_groups
(informative, generated beyond what the rollout holds). TRL's generation metrics (reward, completions/...)
describe every completion generated; mlgrpo's (reward/<lang>, adv/...) the rollout trained on.
Knows nothing about MLflow or YAML.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import torch
from torch import Tensor
from accelerate.utils import gather_object
from torch.utils.data import Sampler
from trl.trainer.utils import RepeatSampler

from mlgrpo.algorithms import GROUP_KEYS, constant_groups, select_groups
from mlgrpo.errors import UserError
from mlgrpo.sampling import LanguageSampler
from mlgrpo.trainers.trl_adapter import completion_log_rows, drop_round_metrics, replace_completion_logs

# The refill stream's seed is the run's plus this, so it does not replay the main order.
REFILL_SEED_OFFSET = 104_729
# TRL's (B, ...) batch fields and how a shorter one is padded to the longest round: prompts on the left,
# completions on the right (None: the tokenizer's pad id). Others are refused: merging them is not known.
LEFT_PADDED = {"prompt_ids": None, "prompt_mask": 0}
RIGHT_PADDED = {"completion_ids": None, "completion_mask": 0, "old_per_token_logps": 0.0, "ref_per_token_logps": 0.0,
                "sampling_per_token_logps": 0.0, "importance_sampling_ratio": 0.0, "tool_mask": 1}
PER_ROW = ("advantages",)  # (B,): replaced by the rollout's own advantages afterwards


class RefillStream:
    """Global generation batches of dataset indices (each prompt's index G times in a row) from `sampler`,
    one batch per call, epoch after epoch; `drawn` counts the batches, `seek` replays a fresh stream to it."""

    def __init__(self, sampler: Sampler[int], rows: int) -> None:
        self.sampler, self.rows, self.drawn = sampler, rows, 0
        self._iterator = None

    def next(self) -> list[int]:
        out: list[int] = []
        fresh = False
        while len(out) < self.rows:
            if self._iterator is None:  # the first call, or the epoch ended: the next one is drawn
                self._iterator, fresh = iter(self.sampler), True
            chunk = list(itertools.islice(self._iterator, self.rows - len(out)))
            if not chunk and fresh:
                raise UserError("dynamic sampling's refill sampler yields no prompts; check the training data")
            if not chunk:
                self._iterator = None
            out, fresh = out + chunk, False
        self.drawn += 1
        return out

    def seek(self, drawn: int) -> None:
        for _ in range(drawn - self.drawn):
            self.next()


@dataclass
class Round:
    """One generation batch of a rollout being filled."""

    output: dict  # TRL's batch of this process's rows
    rows: object  # the gathered BatchRows
    informative: Tensor  # (groups,) bool on the host, in the gathered order: the group is not constant
    logs: dict  # TRL's completions-table rows of this batch (trl_adapter.completion_log_rows)


class RefillingRollouts:
    """Mixin of MultilingualGRPOTrainer: `_refill`, and the refill stream's checkpoint position."""

    _refill_stream: RefillStream | None = None
    _dynamic_languages: set[str] | None = None

    def _refill(self, inputs: list, output: dict, rows, generate) -> tuple[dict, object, dict, list]:
        """The rollout with constant groups replaced by fresh ones: (TRL's batch, its BatchRows, metrics,
        the BatchRows of every batch generated). `generate` is trl_rollout: (TRL's batch, its BatchRows)."""
        max_rounds, size = self.algorithm.dynamic_sampling.max_rounds, self.num_generations
        groups = len(rows.prompts) // size
        rounds = [self._scored_round(output, rows)]
        while len(rounds) <= max_rounds and int(sum(r.informative.sum() for r in rounds)) < groups:
            fresh, fresh_rows = generate(self._fresh_inputs(len(inputs)))
            rounds.append(self._scored_round(fresh, fresh_rows))
        flags = torch.stack([r.informative for r in rounds])  # (R, groups)
        chosen = [(int(c) // groups, int(c) % groups) for c in select_groups(flags.reshape(-1), groups)]
        metrics = self._dynamic_metrics(rounds, flags, chosen)
        if len(rounds) == 1:  # every group informative: the rollout as it was
            return output, rows, metrics, [rows]
        picked = [(r, g * size + j) for r, g in chosen for j in range(size)]  # (round, gathered row)
        replace_completion_logs(self, {key: [rounds[r].logs[key][i] for r, i in picked]
                                       for key in set.intersection(*(set(r.logs) for r in rounds))}, len(rows.prompts))
        drop_round_metrics(self, "train", len(rounds) - 1)
        start = self.accelerator.process_index * len(inputs)
        mine = picked[start : start + len(inputs)]
        return self._merged_batch(rounds, mine), self._merged_rows(rounds, picked, mine), metrics, [r.rows for r in rounds]

    def _scored_round(self, output: dict, rows) -> Round:
        keys = self._group_keys(rows, "train", output)
        advantage = self.algorithm.advantage
        ids = GROUP_KEYS.get(advantage.group_by)(keys, advantage.grouping)
        constant = constant_groups(self._combined_rewards(rows.rewards_per_func), ids,
                                   self.algorithm.dynamic_sampling.tolerance)
        informative = ~constant.view(-1, self.num_generations).all(1).cpu()  # one host read per round: a decision
        return Round(output, rows, informative, completion_log_rows(self, len(rows.prompts)))

    def _fresh_inputs(self, local_rows: int) -> list[dict]:
        """This process's share of a generation batch of fresh prompts, as TRL's data loader gives rows."""
        if self._refill_stream is None:
            self._refill_stream = self._new_refill_stream()
        indices = self._refill_stream.next()
        start = self.accelerator.process_index * local_rows
        return [self.train_dataset[i] for i in indices[start : start + local_rows]]

    def _new_refill_stream(self) -> RefillStream:
        size, rows = self.num_generations, self.args.generation_batch_size
        if self.sampler_config is None:
            sampler = RepeatSampler(self.train_dataset, mini_repeat_count=size, batch_size=rows // size,
                                    repeat_count=1, shuffle=self.shuffle_dataset, seed=self.args.seed + REFILL_SEED_OFFSET)
        else:
            config = dataclasses.replace(self.sampler_config, seed=self.sampler_config.seed + REFILL_SEED_OFFSET)
            sampler = LanguageSampler(self.train_dataset[self.language_column], config, mini_repeat_count=size,
                                      batch_size=rows // size, repeat_count=1)
        return RefillStream(sampler, rows)

    def _refill_position(self) -> int:
        return 0 if self._refill_stream is None else self._refill_stream.drawn

    def _seek_refill(self, drawn: int) -> None:
        if drawn:
            self._refill_stream = self._new_refill_stream()
            self._refill_stream.seek(drawn)

    def _merged_batch(self, rounds: list[Round], mine: list[tuple[int, int]]) -> dict:
        """TRL's batch of this process's share of the chosen rows: every round's batch gathered from all
        processes, padded to common widths, then the rows picked."""
        accelerator, pad_id = self.accelerator, self.text_tokenizer.pad_token_id
        n = len(rounds[0].rows.prompts)
        index = torch.tensor([r * n + i for r, i in mine], dtype=torch.int64, device=accelerator.device)
        merged = {}
        for key in rounds[0].output:
            if key == "num_items_in_batch":
                continue
            if key not in LEFT_PADDED and key not in RIGHT_PADDED and key not in PER_ROW:
                raise UserError(f"dynamic sampling cannot merge TRL's batch field {key!r} (multimodal or tool inputs); "
                                "turn algorithm.dynamic_sampling off for this arm")
            left = key in LEFT_PADDED
            fill = LEFT_PADDED.get(key) if left else RIGHT_PADDED.get(key, 0)
            fill = pad_id if fill is None else fill
            values = [r.output[key] for r in rounds]
            if values[0].dim() > 1:
                values = [accelerator.pad_across_processes(v, dim=1, pad_index=fill, pad_first=left) for v in values]
            merged[key] = torch.cat(_pad_to_widest([accelerator.gather(v) for v in values], fill, left)).index_select(0, index)
        mask = merged["completion_mask"] * merged["tool_mask"] if "tool_mask" in merged else merged["completion_mask"]
        merged["num_items_in_batch"] = accelerator.gather(mask.sum()).sum()  # as TRL counts it, after the choice
        return merged

    def _merged_rows(self, rounds: list[Round], picked: list[tuple[int, int]], mine: list[tuple[int, int]]):
        """The gathered BatchRows of the chosen rows, in the gathered order of the merged batch."""
        first = rounds[0].rows
        n = len(first.prompts)

        def pick(field):
            return None if getattr(first, field) is None else [getattr(rounds[r].rows, field)[i] for r, i in picked]

        flat = torch.tensor([r * n + i for r, i in picked], dtype=torch.int64, device=first.rewards_per_func.device)
        consistency = None
        if first.consistency is not None:
            consistency = PickedRows([r.rows.consistency for r in rounds], mine)
        return dataclasses.replace(
            first, prompts=pick("prompts"), languages=pick("languages"), dataset_rows=pick("dataset_rows"),
            completion_lengths=pick("completion_lengths"), consistency=consistency,
            rewards_per_func=torch.cat([r.rows.rewards_per_func for r in rounds]).index_select(0, flat),
        )

    def _dynamic_metrics(self, rounds: list[Round], flags: Tensor, chosen: list[tuple[int, int]]) -> dict[str, Tensor]:
        size = self.num_generations
        selected = torch.zeros_like(flags)
        for r, g in chosen:
            selected[r, g] = True
        languages = [r.rows.languages[g * size] for r in rounds for g in range(flags.shape[1])]
        if self._dynamic_languages is None:  # every language of the data, so each rollout logs the same keys
            self._dynamic_languages = {str(code or "und") for code in self.train_dataset[self.language_column]}
        codes = sorted(self._dynamic_languages | set(languages))
        lang_ids = torch.tensor([codes.index(code) for code in languages]).view_as(flags)
        metrics = {"dynamic/rounds": float(len(rounds) - 1), "dynamic/surplus_groups": float((flags & ~selected).sum())}
        for name, mask in (("prompts_generated", torch.ones_like(flags)), ("dropped_groups", ~flags & ~selected),
                           ("readmitted_groups", ~flags & selected)):
            counts = torch.bincount(lang_ids[mask], minlength=len(codes)).tolist()
            metrics.update({f"dynamic/{name}/{code}": float(c) for code, c in zip(codes, counts)})
        device = self.accelerator.device  # 0-d tensors, as every metric of the rollout (metrics.to_floats)
        return {name: torch.tensor(value, device=device) for name, value in metrics.items()}


class PickedRows:
    """A Future-like view of this process's chosen rows of several rounds' language-consistency measurements.

    Each round's measurements are of each process's own completions, so `result` gathers them (a collective:
    every process calls it, in the same order, from the trainer's log); a round whose measurement failed
    takes part with None values, and the failure is raised after every gather."""

    def __init__(self, futures: list, rows: list[tuple[int, int]]) -> None:
        self.futures, self.rows = futures, rows

    def result(self, timeout: float | None = None) -> list:
        gathered, failure = [], None
        for future in self.futures:
            try:
                local = future.result(timeout=timeout)
            except Exception as exc:  # noqa: BLE001 - re-raised below, once every process has gathered
                failure, local = exc, [None] * len(self.rows)
            gathered.append(gather_object(local))
        if failure is not None:
            raise failure
        return [gathered[r][i] for r, i in self.rows]


def _pad_to_widest(values: list[Tensor], fill, left: bool) -> list[Tensor]:
    if values[0].dim() < 2:
        return values
    width = max(v.shape[1] for v in values)
    out = []
    for v in values:
        pad = v.new_full((v.shape[0], width - v.shape[1], *v.shape[2:]), fill)
        out.append(torch.cat([pad, v] if left else [v, pad], dim=1))
    return out
