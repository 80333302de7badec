"""TRL behind one adapter: every private TRL/HF method mlgrpo overrides, and every private attribute it reads.

`TRLAdapter` is trl.GRPOTrainer with its private hooks routed to public methods of mlgrpo's trainers, so that
the trainers (grpo.py, ppo.py, sft.py and their mixins) override no private method and read no private
attribute of TRL; a TRL upgrade that moves one fails here, by name (`check_contract` and
tests/trainers/test_trl_adapter.py, which pins each signature in the installed TRL and its behaviour):

    _calculate_rewards(inputs, prompts, completions, completion_ids_list)  -> trainer.on_rewards(..., rewards)
                                     (its record of the batch comes back from trl_rollout, with TRL's dict)
    _generate_and_score_completions(inputs)                               -> trainer.rollout(inputs)
                                     (TRL's evaluation path; mlgrpo's own training step calls rollout itself)
    compute_loss (public; TRL's calls _compute_loss)                       -> trainer.loss(model, inputs)
    _get_train_sampler(dataset)                                           -> trainer.train_sampler(dataset)
    (HF's on_save, right after _save_checkpoint: a callback)              -> trainer.save_state(folder)
    (HF's on_train_begin, after it restored a checkpoint: a callback)     -> trainer.load_state(checkpoint)

TRL's own behaviour stays reachable as trl_rollout, trl_loss and trl_train_sampler; mlgrpo's step
(step.py) replaces TRL's training_step and _prepare_inputs (public HF training_step, overridden there) and
computes the policy's log-probs and entropies with TRL's `_get_per_token_logps_and_entropies` (policy_forward,
token_logps). A run resumed from its last step's checkpoint is restored with HF's `_load_from_checkpoint`, not
trained a step further (train, finished; sharded models: resumed from the checkpoint before). What else mlgrpo
relies on:
- after `_generate_and_score_completions`, TRL has appended one value to `_metrics[mode]["reward_std"]` and
  `["frac_reward_zero_std"]` (of its own prompt groups) and the gathered advantages to `_logs["advantages"]`
  (the completions table); mlgrpo's advantages replace TRL's, so these are replaced (replace_advantage_logs).
- TRL's completions table (`_logs`: prompt, completion, rewards[name], extra[column], images) is a set of
  deques of one generation batch's rows, extended by each generation; dynamic sampling trains on a selection
  of several rounds' rows, so the table is rewritten with the rows trained on (completion_log_rows,
  replace_completion_logs).
- TRL's RepeatSampler draws epoch e's order as the e-th permutation of one generator seeded once
  (EpochSeekingRepeatSampler).
- TRL reads `self.num_generations` afresh on every generation (vLLM's one prompt per group; the reward
  grouping behind its reward_std logs). It caches it only in the train sampler (replaced by mlgrpo's when a
  schedule is set), in `get_train_dataloader`'s iterable-dataset path (a schedule refuses iterable datasets)
  and in `num_generations_eval`'s default (evaluation keeps the first size). So setting the attribute before
  each rollout's generation is enough for a group-size schedule (set_group_size).
Knows nothing about MLflow or YAML.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Sequence

import torch
from torch import Tensor
from transformers import TrainerCallback, TrainerState
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, TrainOutput, get_last_checkpoint
from trl import GRPOTrainer
from trl.trainer.utils import RepeatSampler

# The private methods TRLAdapter overrides (PRIVATE_OVERRIDES) or calls, with their parameters as the installed
# TRL (1.16) and transformers declare them (annotations aside). A TRL that changes one makes check_contract
# name it.
PRIVATE_METHODS = {
    "_calculate_rewards": "(self, inputs, prompts, completions, completion_ids_list)",
    "_generate_and_score_completions": "(self, inputs)",
    "_compute_loss": "(self, model, inputs)",
    "_get_per_token_logps_and_entropies": (
        "(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False, "
        "compute_aux_loss=False, pixel_values=None, image_grid_thw=None, num_images=None, pixel_attention_mask=None, "
        "spatial_shapes=None, num_tiles=None, image_sizes=None, token_type_ids=None, mm_token_type_ids=None, "
        "image_position_ids=None)"),
    "_get_train_sampler": "(self, dataset=None)",
    "_save_checkpoint": "(self, model, trial)",
    "_tokenize_prompts": "(self, prompts)",
    "_get_output_dir": "(self, trial)",
    "_load_from_checkpoint": "(self, resume_from_checkpoint, model=None)",
}
PRIVATE_OVERRIDES = ("_calculate_rewards", "_generate_and_score_completions", "_get_train_sampler")


def parameters(method) -> str:
    """A method's parameters and defaults, without annotations: "(self, dataset=None)"."""
    bare = [p.replace(annotation=inspect.Parameter.empty) for p in inspect.signature(method).parameters.values()]
    return str(inspect.Signature(bare))


def check_contract(trainer_class: type = GRPOTrainer) -> list[str]:
    """One line per private method whose parameters in `trainer_class` are not those TRLAdapter was written
    against (empty: TRL as expected)."""
    problems = []
    for name, expected in PRIVATE_METHODS.items():
        method = getattr(trainer_class, name, None)
        if method is None:
            problems.append(f"{trainer_class.__name__}.{name} no longer exists (mlgrpo's trl_adapter relies on it)")
        elif (found := parameters(method)) != expected:
            problems.append(f"{trainer_class.__name__}.{name}{found} changed from {name}{expected}, which "
                            "mlgrpo/trainers/trl_adapter.py relies on: check what TRL's new version does there")
    return problems


def previous_checkpoint(checkpoint: str) -> str | None:
    """The newest checkpoint beside `checkpoint` of an earlier step (complete: written before it), or None."""
    folder, name = os.path.split(os.path.normpath(checkpoint))
    steps = {int(m[1]): n for n in os.listdir(folder) if (m := re.fullmatch(rf"{PREFIX_CHECKPOINT_DIR}-(\d+)", n))}
    earlier = [step for step in steps if step < int(name.rsplit("-", 1)[1])]
    return os.path.join(folder, steps[max(earlier)]) if earlier else None


class _TrainerState(TrainerCallback):
    """The trainer's own checkpoint state, beside HF's. HF calls on_save on every process right after
    `_save_checkpoint` wrote the step's folder (its one call site), and on_train_begin after it restored
    the weights, optimiser, scheduler and trainer state of the checkpoint it resumes from, and built the
    data loader, before the first batch is drawn: where the sampler's and TRL's state must be restored."""

    def __init__(self, trainer: TRLAdapter) -> None:
        self.trainer = trainer

    def on_train_begin(self, args, state, control, **kwargs):
        if self.trainer.resuming_from is not None:
            self.trainer.load_state(self.trainer.resuming_from)
        return control

    def on_save(self, args, state, control, **kwargs):
        # _get_output_dir(trial=None): args.output_dir (mlgrpo runs no hyperparameter search, HF's trials)
        folder = os.path.join(self.trainer._get_output_dir(trial=None), f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
        os.makedirs(folder, exist_ok=True)  # every process writes its own files, as HF's RNG states
        self.trainer.save_state(folder)
        return control


class TRLAdapter(GRPOTrainer):
    """trl.GRPOTrainer whose private hooks call public methods, overridden by mlgrpo's trainers.

    Each default is TRL's own behaviour, so the adapter alone trains as stock TRL does.
    """

    _scored: object = None  # what on_rewards made of the rollout TRL is scoring (trl_rollout returns it)

    def __init__(self, *args, **kwargs) -> None:
        problems = check_contract(GRPOTrainer)
        if problems:  # one place, by name, rather than a trainer that silently trains on something else
            raise RuntimeError("the installed trl is not the one mlgrpo's TRL adapter was written for:\n" + "\n".join(problems))
        super().__init__(*args, **kwargs)
        self.resuming_from: str | None = None  # the checkpoint train() resumes from, while it runs
        # First, so that other callbacks see a checkpoint with its state and a resumed trainer restored.
        self.callback_handler.callbacks.insert(0, _TrainerState(self))

    def train(self, resume_from_checkpoint: str | bool | None = None, trial=None, ignore_keys_for_eval=None):
        """HF's train(), remembering the checkpoint it resumes from (True: the newest in output_dir, as HF)."""
        path = resume_from_checkpoint
        if isinstance(path, bool):
            path = get_last_checkpoint(self.args.output_dir) if path else None
        if path is not None and self.finished(str(path)):
            if not (self.is_deepspeed_enabled or self.is_fsdp_enabled):
                return self.restore_finished(str(path))
            # Sharded models load inside HF's loop, after accelerate prepared them: resumed from the checkpoint
            # before (None: the start), the steps since are trained again, as they were the first time.
            path = resume_from_checkpoint = previous_checkpoint(str(path))
        self.resuming_from = None if path is None else str(path)
        try:
            return super().train(resume_from_checkpoint, trial, ignore_keys_for_eval)
        finally:
            self.resuming_from = None

    def finished(self, checkpoint: str) -> bool:
        """Whether `checkpoint` was saved at the last step (args.max_steps).

        HF's loop trains a step before it checks max_steps: resumed from its last step's checkpoint, a run trains
        step max_steps + 1 (measured with stock trl.GRPOTrainer, transformers 5.24: max_steps 5, resumed from
        checkpoint-5, one more optimiser step, global_step 6). A run whose worker died after that checkpoint
        (in its final evaluation, or a Ray node lost) is restored instead, or under DeepSpeed and FSDP resumed
        from the checkpoint before."""
        state = os.path.join(checkpoint, TRAINER_STATE_NAME)
        return (self.args.max_steps > 0 and os.path.isfile(state)
                and TrainerState.load_from_json(state).global_step >= self.args.max_steps)

    def restore_finished(self, checkpoint: str) -> TrainOutput:
        """The weights and trainer state of a checkpoint of the last step, without a step of training (HF's
        _load_from_checkpoint: full weights or a PEFT adapter, as train() loads them)."""
        self._load_from_checkpoint(checkpoint)
        self.state = TrainerState.load_from_json(os.path.join(checkpoint, TRAINER_STATE_NAME))
        return TrainOutput(self.state.global_step, 0.0, {})

    # ---- routing of TRL's private hooks --------------------------------------------------------------

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        rewards, self._scored = self.on_rewards(inputs, prompts, completions, completion_ids_list, rewards)
        return rewards

    def _generate_and_score_completions(self, inputs):
        return self.rollout(inputs)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if return_outputs:  # as TRL: the loss is all there is
            raise ValueError("The GRPOTrainer does not support returning outputs")
        return self.loss(model, inputs)

    def _get_train_sampler(self, dataset=None):
        return self.train_sampler(dataset)

    # ---- the public hooks, TRL's behaviour by default ------------------------------------------------

    def on_rewards(self, inputs, prompts, completions, completion_ids_list,
                   rewards_per_func: Tensor) -> tuple[Tensor, object]:
        """(the gathered (N, F) rewards TRL computed, as the rollout should use them; a record of the batch,
        which trl_rollout returns)."""
        return rewards_per_func, None

    def rollout(self, inputs: list[dict]) -> dict:
        """One generation batch: this process's rows generated, scored and given advantages (TRL's dict)."""
        return self.trl_rollout(inputs)[0]

    def trl_rollout(self, inputs: list[dict]) -> tuple[dict, object]:
        """(TRL's generation batch, the record on_rewards made of its rewards)."""
        self._scored = None
        output = super()._generate_and_score_completions(inputs)
        scored, self._scored = self._scored, None
        return output, scored

    def loss(self, model, inputs: dict) -> Tensor:
        """The micro-batch's loss, already divided for gradient accumulation."""
        return self.trl_loss(model, inputs)

    def trl_loss(self, model, inputs: dict) -> Tensor:
        return self._compute_loss(model, inputs)  # TRL's, or a subclass's override of it

    def train_sampler(self, dataset=None):
        return self.trl_train_sampler(dataset)

    def trl_train_sampler(self, dataset=None):
        return super()._get_train_sampler(dataset)

    def save_state(self, folder: str) -> None:
        """Write what resuming needs beyond HF's checkpoint into `folder` (after HF wrote its files)."""

    def load_state(self, checkpoint: str) -> None:
        """Read back what save_state wrote (after HF restored the optimiser and scheduler)."""

    # ---- TRL's state, read and written here only ----------------------------------------------------

    def policy_forward(self, model, batch) -> tuple[Tensor, Tensor, Tensor | None]:
        """(log-probs (B, T), entropies (B, T), the router's auxiliary loss or None) of a Rollout's completion
        tokens under `model`, with gradient, as TRL's _compute_loss computes them (temperature, fused head)."""
        ids, attention = batch.sequences()
        logps, entropies, aux = self._get_per_token_logps_and_entropies(
            model, ids, attention, batch.completion_ids.size(1), compute_entropy=True,
            compute_aux_loss=self.aux_loss_enabled, **batch.model_inputs)
        return logps, entropies, aux if self.aux_loss_enabled else None

    def token_logps(self, model, input_ids: Tensor, attention_mask: Tensor, completion_tokens: int,
                    batch_size: int | None = None) -> Tensor:
        """(B, T) log-probs of the last `completion_tokens` tokens of each row under `model`, at TRL's sampling
        temperature, in forwards of `batch_size` rows (TRL's log-prob pass)."""
        return self._get_per_token_logps_and_entropies(model, input_ids, attention_mask, completion_tokens, batch_size)[0]

    def record_metric(self, mode: str, name: str, value: float) -> None:
        """One value for TRL's log to average into `name` at the next logging step ("train" or "eval")."""
        self._metrics[mode][name].append(value)

    @property
    def text_tokenizer(self):
        """The processing class's text tokenizer (TRL's `_tokenizer`: the processor's, for vision models)."""
        return self._tokenizer

    def prompt_token_ids(self, prompts: list) -> list[list[int]]:
        """Each prompt's token ids as TRL tokenizes prompts for generation (chat template included)."""
        return self._tokenize_prompts(prompts)[0]


def replace_advantage_logs(trainer, mode: str, advantages: Sequence[float], reward_std: float,
                           frac_zero_std: float) -> None:
    """TRL's logged advantage statistics of the generation batch just scored, replaced by mlgrpo's.

    advantages: one number per completion of the gathered batch, in TRL's order (the completions table's
    `advantage` column); reward_std: std of the reward the advantages come from; frac_zero_std: share of
    completions in baseline groups without reward spread (adv/frac_zero_std).
    """
    metrics = trainer._metrics[mode]
    for name, value in (("reward_std", reward_std), ("frac_reward_zero_std", frac_zero_std)):
        if metrics[name]:
            metrics[name][-1] = float(value)
    logged = trainer._logs["advantages"]
    for _ in range(min(len(advantages), len(logged))):
        logged.pop()
    logged.extend(float(a) for a in advantages)


def _row_columns(trainer) -> dict[tuple[str, ...], object]:
    logs = trainer._logs
    columns = {("prompt",): logs["prompt"], ("completion",): logs["completion"], ("images",): logs["images"]}
    columns.update({("rewards", name): column for name, column in logs["rewards"].items()})
    columns.update({("extra", name): column for name, column in logs["extra"].items()})
    return columns


def completion_log_rows(trainer, n: int) -> dict[tuple[str, ...], list]:
    """The last `n` rows of each column of TRL's completions table (those of the batch just scored); columns
    with fewer rows (images of a text-only run) are left out."""
    return {key: list(column)[-n:] for key, column in _row_columns(trainer).items() if len(column) >= n}


def replace_completion_logs(trainer, rows: dict[tuple[str, ...], list], n: int) -> None:
    """The last `n` rows of each column in `rows` replaced by the given ones (the rows trained on)."""
    columns = _row_columns(trainer)
    for key, values in rows.items():
        column = columns[key]
        for _ in range(min(n, len(column))):
            column.pop()
        column.extend(values)


def drop_round_metrics(trainer, mode: str, rounds: int) -> None:
    """TRL's group statistics of `rounds` extra scored batches removed, so that one value per rollout is left
    for `replace_advantage_logs` to replace (the others describe groups that were not trained on)."""
    for name in ("reward_std", "frac_reward_zero_std"):
        values = trainer._metrics[mode][name]
        del values[max(0, len(values) - rounds):]


class EpochSeekingRepeatSampler(RepeatSampler):
    """TRL's RepeatSampler, same orders, that can start at any epoch.

    HF's Trainer, resuming inside epoch e >= 1, iterates none of the epochs before it, and does not reach
    the sampler's set_epoch through the loader that skips the trained batches: TRL's own sampler would then
    draw epoch 0's order again (measured: parameters 2.5e-4 to 9.4e-4 apart from the uninterrupted run
    after 1-2 more steps). set_epoch(e) seeds again and draws the e permutations before, so epoch e's order
    comes from any start.
    """

    def set_epoch(self, epoch: int) -> None:
        if self.shuffle and self.seed is not None:
            self.generator.manual_seed(self.seed)
            for _ in range(epoch):
                torch.randperm(self.num_samples, generator=self.generator)


def set_group_size(trainer, size: int) -> None:
    """The group size TRL generates and groups the next rollout with (see the module docstring)."""
    trainer.num_generations = size
