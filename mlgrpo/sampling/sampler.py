"""The language-aware sampler: a drop-in for TRL's RepeatSampler that draws prompts by language shares.

Index layout is TRL's (trl/trainer/utils.py::RepeatSampler, as GRPOTrainer._get_train_sampler builds it):
each generation batch holds `batch_size` drawn prompts, each index repeated `mini_repeat_count` (= G)
times in a row, and the whole batch repeated `repeat_count` (= num_iterations * steps_per_generation)
times. accelerate deals the resulting stream to ranks in consecutive per-rank batches
(`shard.rank_shard`), so every rank builds this sampler with the same seed and gets a slice of one
global order. Knows nothing about models, tokenizers, TRL or MLflow: it sees language labels and rewards.

Resuming: the draws depend on history (draw counts across epochs, rewards so far), so the order is not a
function of (seed, epoch) alone and a restarted run cannot rebuild it by replaying the data loader.
`state_dict()` holds that history plus the epoch in progress (the batches handed out so far and the
current plan); after `load_state_dict()` the next iteration of that epoch hands out the same batches
again, uncounted, then continues exactly where the saved sampler would have. A consumer that skips the
batches it already trained on (the HF Trainer does on resume) therefore reads the uninterrupted order.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from torch.utils.data import Sampler

from mlgrpo.errors import UserError
from mlgrpo.sampling.buckets import reward_buckets
from mlgrpo.sampling.config import SamplerConfig
from mlgrpo.sampling.draws import language_sequence, pick_items, spread_over_strata
from mlgrpo.sampling.weights import target_shares


@dataclass
class _EpochCursor:
    """How far one epoch's iteration has gone: what a restarted run needs to continue it."""

    epoch: int
    horizon: int  # draws the next plan covers
    plan_version: int  # the reward version the current plan was drawn under
    drawn: list[np.ndarray] = field(default_factory=list)  # batches handed out (rows, before repetition)
    plan: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))  # rows for draws plan_start...
    plan_start: int = 0


class LanguageSampler(Sampler[int]):
    """Prompt indices for GRPO rollouts, drawn by `config` and laid out as TRL's RepeatSampler lays them.

    languages: one language label per dataset row (e.g. dataset["language"]).
    expected_languages: the experiment's languages; one with no rows is an error, not a silent 0 share.
    Each epoch draws `prompts_per_epoch` prompts (rounded down to whole batches): the language of each
    draw in exact per-epoch quotas of the target shares, then a row of that language, least drawn first.
    State (draw counts, rewards) carries over epochs, as TRL's sampler's generator does: the same seed
    and the same calls give the same order, so every rank of a run reads one global order.
    """

    def __init__(
        self,
        languages: Iterable[str],
        config: SamplerConfig,
        *,
        mini_repeat_count: int,
        batch_size: int = 1,
        repeat_count: int = 1,
        expected_languages: Iterable[str] = (),
    ) -> None:
        labels = list(languages)
        if not labels:
            raise UserError("the dataset has no rows: there are no prompts to sample")
        for row, label in enumerate(labels):
            if not isinstance(label, str) or not label:
                raise UserError(f"row {row} has language {label!r}: every row needs a language code to be sampled")
        for key, value in (("mini_repeat_count", mini_repeat_count), ("batch_size", batch_size),
                           ("repeat_count", repeat_count)):
            if not isinstance(value, int) or value < 1:
                raise UserError(f"{key} must be an integer >= 1, got {value!r}")
        counts = {lang: 0 for lang in expected_languages} | Counter(labels)
        self.config = config
        self.mini_repeat_count, self.batch_size, self.repeat_count = mini_repeat_count, batch_size, repeat_count
        self.languages: tuple[str, ...] = tuple(sorted(counts))
        self.num_batches = (config.prompts_per_epoch or len(labels)) // batch_size
        if self.num_batches == 0:
            raise UserError(
                f"an epoch of {config.prompts_per_epoch or len(labels)} prompts holds no full generation batch of "
                f"{batch_size}; lower the batch size or raise prompts_per_epoch"
            )
        draws = self.num_batches * batch_size
        self.target: dict[str, float] = {
            lang: share for lang, share in sorted(target_shares(counts, config, draws).items())
        }
        self._shares = np.array(list(self.target.values()))
        self._lang_of = np.searchsorted(np.array(self.languages), np.array(labels))
        self._item_draws = np.zeros(len(labels), dtype=np.int64)
        self._lang_draws = np.zeros(len(self.languages), dtype=np.int64)
        self._reward_sum = np.zeros(len(labels))
        self._reward_n = np.zeros(len(labels), dtype=np.int64)
        self._version = 0  # bumped by update_rewards when buckets are on; older plans are redrawn
        self._epoch = 0
        self._cursor: _EpochCursor | None = None  # the epoch being (or last) iterated
        self._restored: _EpochCursor | None = None  # set by load_state_dict for the next iteration

    def __len__(self) -> int:
        return self.num_batches * self.batch_size * self.mini_repeat_count * self.repeat_count

    def set_epoch(self, epoch: int) -> None:
        """Which epoch the next iteration draws (accelerate and the HF Trainer call this)."""
        self._epoch = epoch

    def __iter__(self) -> Iterator[int]:
        epoch, self._epoch = self._epoch, self._epoch + 1
        restored, self._restored = self._restored, None
        if restored is not None and restored.epoch != epoch:  # another epoch was asked for: draw it afresh
            restored = None
        # Lists per generation batch, flattened in C: a Python generator step per index would cost
        # more than the drawing itself at a million indices.
        return itertools.chain.from_iterable(self._iter_batches(epoch, restored))

    def _iter_batches(self, epoch: int, restored: _EpochCursor | None) -> Iterator[list[int]]:
        seed, size = self.config.seed, self.batch_size
        sequence = language_sequence(self._shares, self.num_batches * size, np.random.default_rng([seed, epoch]))
        # A new epoch's first plan covers the whole epoch.
        cursor = self._cursor = restored or _EpochCursor(epoch, horizon=len(sequence), plan_version=self._version)
        for batch in cursor.drawn:  # a restored epoch: what was handed out before, already counted
            yield self._layout(batch)
        for start in range(len(cursor.drawn) * size, len(sequence), size):
            if cursor.plan_version != self._version:
                # New rewards move rows between buckets: redraw. They usually come every batch, so plan
                # one batch ahead (a plan costs O(rows)), doubling after each plan used up without news.
                cursor.plan, cursor.horizon = cursor.plan[:0], size
            if start - cursor.plan_start >= len(cursor.plan):
                rng = np.random.default_rng([seed, epoch, start + 1])
                cursor.plan = self._draw_rows(sequence[start : start + cursor.horizon], rng)
                cursor.plan_start, cursor.plan_version, cursor.horizon = start, self._version, 2 * cursor.horizon
            batch = cursor.plan[start - cursor.plan_start : start - cursor.plan_start + size]
            self._record(batch)
            cursor.drawn.append(batch)
            yield self._layout(batch)

    def _layout(self, batch: np.ndarray) -> list[int]:
        return np.tile(np.repeat(batch, self.mini_repeat_count), self.repeat_count).tolist()

    def _record(self, batch: np.ndarray) -> None:
        # Counted when a batch is handed out, not when planned: a plan cut short by update_rewards
        # must not count draws that never happened.
        np.add.at(self._item_draws, batch, 1)
        np.add.at(self._lang_draws, self._lang_of[batch], 1)

    def _draw_rows(self, languages: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A row for each draw whose language id is given, by the config's strata."""
        n_buckets = self.config.reward_buckets
        if n_buckets == 0:
            return pick_items(languages, self._lang_of, self._item_draws, rng)
        mean = np.divide(self._reward_sum, self._reward_n, out=np.full(len(self._reward_n), np.nan),
                         where=self._reward_n > 0)
        item_stratum = self._lang_of * (n_buckets + 1) + reward_buckets(mean, self._lang_of, n_buckets)
        n_strata = len(self.languages) * (n_buckets + 1)
        strata = spread_over_strata(
            languages,
            np.arange(n_strata) // (n_buckets + 1),
            np.bincount(item_stratum, minlength=n_strata),
            self._shares * self.num_batches * self.batch_size,
            self.config.max_repeats_per_item,
            rng,
        )
        return pick_items(strata, item_stratum, self._item_draws, rng)

    def update_rewards(self, indices: Sequence[int] | np.ndarray, rewards: Sequence[float] | np.ndarray) -> None:
        """Add the rewards of a step: rewards[i] was earned by a completion of prompt indices[i].

        A prompt's bucket uses the mean of all its rewards so far. On several ranks, call this with the
        same gathered values on every rank, at the same step, or the ranks' global orders diverge.
        Without reward buckets the rewards are kept but do not change the draws.
        """
        idx = np.asarray(_to_numpy(indices), dtype=np.int64).ravel()
        values = np.asarray(_to_numpy(rewards), dtype=np.float64).ravel()
        if idx.shape != values.shape:
            raise ValueError(f"update_rewards got {idx.size} indices but {values.size} rewards")
        bad = np.flatnonzero((idx < 0) | (idx >= len(self._lang_of)))
        if bad.size:
            raise ValueError(f"update_rewards: index {idx[bad[0]]} is not a row of a {len(self._lang_of)}-row dataset")
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(f"update_rewards: reward {values[bad[0]]} for row {idx[bad[0]]} is not finite")
        np.add.at(self._reward_sum, idx, values)
        np.add.at(self._reward_n, idx, 1)
        if self.config.reward_buckets:  # only bucketed draws depend on rewards
            self._version += 1

    def language_counts(self) -> dict[str, int]:
        """Prompts drawn so far per language (each counted once, not G times), for logging the real shares."""
        return dict(zip(self.languages, self._lang_draws.tolist()))

    # ---- checkpoints -----------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything the next draws depend on, as numpy arrays and plain values (see the module docstring)."""
        state = {
            "rows": len(self._lang_of), "languages": list(self.languages), "batch_size": self.batch_size,
            "num_batches": self.num_batches, "next_epoch": self._epoch,
            "version": self._version, "item_draws": self._item_draws.copy(), "lang_draws": self._lang_draws.copy(),
            "reward_sum": self._reward_sum.copy(), "reward_n": self._reward_n.copy(),
        }
        cursor = self._cursor
        if cursor is not None:
            drawn = np.stack(cursor.drawn) if cursor.drawn else np.empty((0, self.batch_size), dtype=np.int64)
            state.update(epoch=cursor.epoch, horizon=cursor.horizon, plan_version=cursor.plan_version,
                         drawn=drawn, plan=cursor.plan.copy(), plan_start=cursor.plan_start)
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue from `state_dict()` of a sampler built on the same rows with the same settings."""
        mine = self.state_dict()
        for key in ("rows", "languages", "batch_size", "num_batches"):
            if state[key] != mine[key]:
                raise UserError(
                    f"the saved sampler state has {key} = {state[key]!r}, this sampler {mine[key]!r}: resume with "
                    "the data, batch size and prompts_per_epoch the run started with"
                )
        self._version, self._epoch = int(state["version"]), int(state["next_epoch"])
        self._item_draws, self._lang_draws = np.array(state["item_draws"]), np.array(state["lang_draws"])
        self._reward_sum, self._reward_n = np.array(state["reward_sum"]), np.array(state["reward_n"])
        self._cursor = self._restored = None
        if "epoch" not in state:  # saved before the first iteration
            return
        cursor = _EpochCursor(int(state["epoch"]), horizon=int(state["horizon"]),
                              plan_version=int(state["plan_version"]), drawn=list(np.array(state["drawn"])),
                              plan=np.array(state["plan"]), plan_start=int(state["plan_start"]))
        # The next iteration of the saved epoch continues it, even when all its batches were handed out:
        # a data loader reads ahead, so its consumer may still be inside that epoch (HF then asks for it
        # again and skips what it trained on). Without set_epoch, the next epoch is the one still unfinished.
        self._cursor = self._restored = cursor
        if len(cursor.drawn) < self.num_batches:
            self._epoch = cursor.epoch


def _to_numpy(values):
    # Rewards arrive as torch tensors, possibly on an accelerator; numpy cannot read those directly.
    if hasattr(values, "detach"):
        return values.detach().cpu().numpy()
    return values
