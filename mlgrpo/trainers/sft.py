"""The supervised control arm: is RL worth it here at all? SFT on the accepted answers, compute-matched.

`SupervisedTrainer` is a MultilingualGRPOTrainer that does not generate: where TRL would sample completions
for a generation batch it takes the records' own answers, and its loss is the token-mean cross-entropy of
them. Everything else is the RL arms' machinery, so the comparison is fair by construction:

    the same sampler and seed -> the same prompts in the same order, G copies of each (TRL's layout)
    -> per copy k the k-th accepted answer (cyclically), or the record's worked solution (SFTSettings.target)
    -> the same batch, update schedule, optimiser and learning-rate schedule, checkpoints and resume
    -> budget "samples": training.max_steps steps, as many completions as an RL arm trains on;
       budget "time": stop at the first step past `seconds` of training wall time (carried across resumes)

Targets are cut to max_completion_length tokens (an RL completion cannot be longer) and end with the
tokenizer's end-of-sequence token, so the model learns to stop. The KL, the entropy bonus and reward-
stratified sampling need rollouts and are refused. Logs `sft/nll` (per language too) and `sft/target_tokens`.
Knows nothing about MLflow or YAML.
"""

from __future__ import annotations

import math
import os
import time

import torch
import torch.distributed as dist
from transformers import TrainerCallback

from mlgrpo.algorithms.losses import LOSSES
from mlgrpo.errors import UserError
from mlgrpo.trainers.checkpoints import EXTRA_STATE
from mlgrpo.trainers.grpo import MultilingualGRPOTrainer
from mlgrpo.trainers.metrics import per_language, to_floats
from mlgrpo.trainers.rollout import Rollout

SECONDS = "sft_seconds"  # training wall time so far, in mlgrpo's checkpoint state


def supervised_target(row: dict, copy: int, target: str) -> str:
    """The text copy `copy` of a prompt trains on: its `copy`-th accepted answer (cyclically), or its solution.

    >>> row = {"answers": ["zweihundert", "zwei hundert"], "reference": "zweihundert", "solution": "... #### 200"}
    >>> [supervised_target(row, k, "answers") for k in range(3)], supervised_target(row, 0, "solution")
    (['zweihundert', 'zwei hundert', 'zweihundert'], '... #### 200')
    """
    if target == "solution":
        return row["solution"]
    answers = row.get("answers") or [row["reference"]]
    return answers[copy % len(answers)]


class _TimeBudget(TrainerCallback):
    """Stops at the first step end past the budget; every rank stops at the same step (rank 0's clock decides)."""

    def __init__(self, trainer: SupervisedTrainer) -> None:
        self.trainer = trainer

    def on_train_begin(self, args, state, control, **kwargs):
        self.trainer._clock_started = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        over = torch.tensor([float(self.trainer.seconds_used() >= self.trainer.algorithm.sft.seconds)],
                            device=self.trainer.accelerator.device)
        if self.trainer.accelerator.num_processes > 1:
            dist.broadcast(over, src=0)
        if over.item():
            control.should_training_stop = True
            control.should_save = True
        return control


class SupervisedTrainer(MultilingualGRPOTrainer):
    """SFT on the RL arms' data order and sample count. `algorithm.name` must be "sft"."""

    def __init__(self, *args, algorithm=None, **kwargs) -> None:
        if algorithm is None or algorithm.name != "sft":
            raise UserError("SupervisedTrainer needs an AlgorithmConfig with name 'sft'")
        sampler = kwargs.get("sampler")
        if sampler is not None and sampler.reward_buckets > 0:
            raise UserError("sampler.reward_buckets draws by earlier rewards, which the SFT arm does not have: its "
                            "order would differ from the RL arms'; give the sft arm a sampler without reward_buckets")
        super().__init__(*args, algorithm=algorithm, **kwargs)
        if self.entropy_coef != 0 or self.args.use_adaptive_entropy:
            raise UserError("training.entropy_coef: the entropy bonus acts on sampled completions, which the SFT arm "
                            "does not have; give the sft arm its own `training: {entropy_coef: 0}`")
        column = "solution" if algorithm.sft.target == "solution" else "reference"
        if column not in self.train_dataset.column_names:
            raise UserError(f"sft.target {algorithm.sft.target}: the training data has no {column!r} column; use a "
                            "suite or file that has one (the gsm suite has solutions)")
        self._languages = tuple(sorted(set(self.train_dataset[self.language_column])))
        self._seconds_carried = 0.0
        self._clock_started = time.perf_counter()
        if algorithm.sft.budget == "time":
            self.add_callback(_TimeBudget(self))

    def seconds_used(self) -> float:
        """Training wall time of the run so far: earlier sessions (from the checkpoint) and this one."""
        return self._seconds_carried + time.perf_counter() - self._clock_started

    # ---- the batch: the records' answers instead of sampled completions ------------------------------

    def rollout(self, inputs):
        started = time.perf_counter()
        offset = self.accelerator.process_index * len(inputs)  # the copy index is the global position mod G
        targets = [supervised_target(row, (offset + i) % self.num_generations, self.algorithm.sft.target)
                   for i, row in enumerate(inputs)]
        prompt_ids = self.prompt_token_ids([row["prompt"] for row in inputs])
        completion_ids = self._target_ids([row["prompt"] for row in inputs], targets)
        device = self.accelerator.device
        pad_id = self.text_tokenizer.pad_token_id
        prompt, prompt_mask = _pad([torch.tensor(ids) for ids in prompt_ids], pad_id, "left")
        completion, completion_mask = _pad([torch.tensor(ids) for ids in completion_ids], pad_id, "right")
        languages = [str(row.get(self.language_column) or "und") for row in inputs]
        mode = "train" if self.model.training else "eval"
        lengths = completion_mask.sum(1).float()
        self.record_metric(mode, "sft/target_tokens", self.accelerator.gather(lengths).mean().item())
        self.record_metric(mode, "system/samples_per_sec", len(inputs) / max(time.perf_counter() - started, 1e-9))
        return Rollout(prompt_ids=prompt.to(device), prompt_mask=prompt_mask.to(device),
                       completion_ids=completion.to(device), completion_mask=completion_mask.to(device),
                       languages=languages)

    def _target_ids(self, prompts: list[str], targets: list[str]) -> list[list[int]]:
        """Each target as the tokens that would follow its prompt, end-of-sequence last, cut to the RL arms'
        max_completion_length (the end token then falls off, as for an RL completion that ran out)."""
        from mlgrpo.models.warmstart import completion_for

        texts = [completion_for(prompt, target) for prompt, target in zip(prompts, targets, strict=True)]
        ids = self.processing_class(text=texts, add_special_tokens=False)["input_ids"]
        eos_id = self.text_tokenizer.eos_token_id
        eos = [] if eos_id is None else [eos_id]
        return [(row + eos)[: self.max_completion_length] for row in ids]

    # ---- the loss: cross-entropy of the target tokens ----------------------------------------------

    def loss(self, model, batch: Rollout):
        ids, attention = batch.sequences()
        width = batch.completion_ids.size(1)
        logits = model(input_ids=ids, attention_mask=attention).logits[:, -width - 1:-1].float()
        loss, metrics = LOSSES.get("sft")(logits, batch.completion_ids, batch.completion_mask.float())
        mode = "train" if self.model.training else "eval"
        lang_ids = torch.tensor([self._languages.index(x) if x in self._languages else 0 for x in batch.languages],
                                device=batch.completion_ids.device)
        gathered, lang_ids = self.accelerator.gather(metrics["sft/nll_rows"]), self.accelerator.gather(lang_ids)
        self.record_metric(mode, "sft/nll", gathered.mean().item())
        for name, value in to_floats(per_language(gathered, lang_ids, self._languages, "sft/nll")).items():
            if "_std/" not in name and math.isfinite(value):  # a language without rows here has no mean
                self.record_metric(mode, name, value)
        scale = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        return loss / scale

    # ---- checkpoints: the time budget's clock --------------------------------------------------------

    def _extra_state(self) -> dict:
        return {**super()._extra_state(), SECONDS: self.seconds_used()}

    def load_state(self, checkpoint: str) -> None:
        super().load_state(checkpoint)
        path = os.path.join(checkpoint, EXTRA_STATE.format(rank=self.accelerator.process_index))
        if os.path.exists(path):
            self._seconds_carried = float(torch.load(path, weights_only=True, map_location="cpu").get(SECONDS, 0.0))


def _pad(rows: list[torch.Tensor], pad_id: int, side: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) ids and mask of ragged rows, padded on `side` ("left" for prompts, "right" for completions)."""
    from trl.trainer.utils import pad

    ids = pad(rows, padding_value=pad_id, padding_side=side)
    mask = pad([torch.ones_like(r) for r in rows], padding_value=0, padding_side=side)
    return ids, mask
