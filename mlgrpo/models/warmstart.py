"""The warm start: a short SFT run (TRL SFTTrainer) that stops on a measured exact match.

Where the jump in exact match falls depends on the seed (../shared/research/stack.md), so a fixed
step count gives some seeds a start at 0 and others a saturated one. Instead, every `check_every`
steps the callback measures greedy exact match on a held-out sample and stops at the first check
that reaches `target_exact_match`, or at `max_steps`. The stopping rule is the pure function
`stop_reason`; the callback only measures and records.
Knows nothing about the cache, the CLI or how records were made.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from transformers import PreTrainedModel, PreTrainedTokenizerBase, TrainerCallback

from mlgrpo.models.greedy import exact_match_by_language, macro_mean
from mlgrpo.models.settings import TinySettings

THRESHOLD = "threshold"
CAP = "cap"


def stop_reason(step: int, exact_match: float, *, target: float, max_steps: int) -> str | None:
    """Why training stops after a check at `step` that measured `exact_match`, or None to go on.

    Reaching the target wins over the cap, so a run that reaches it exactly at the cap says so.

    >>> stop_reason(40, 0.31, target=0.3, max_steps=800)
    'threshold'
    >>> stop_reason(800, 0.12, target=0.3, max_steps=800), stop_reason(40, 0.12, target=0.3, max_steps=800)
    ('cap', None)
    """
    if exact_match >= target:
        return THRESHOLD
    if step >= max_steps:
        return CAP
    return None


def is_check_step(step: int, *, check_every: int, max_steps: int) -> bool:
    """Measure every `check_every` steps, and always at the cap so that the last model is measured."""
    return step % check_every == 0 or step >= max_steps


def completion_for(prompt: str, reference: str) -> str:
    """The SFT target after `prompt`: the reference, after one space unless the prompt ends in one.

    The space belongs to the completion because the byte-level tokenizer glues a leading space to
    the next word ("Ġtwo"); a prompt ending in a space would be tokenized differently alone.
    """
    return reference if prompt[-1:].isspace() else " " + reference


@dataclass(frozen=True)
class Check:
    step: int
    exact_match: float  # macro mean over languages
    by_language: dict[str, float]
    seconds: float  # since training started
    measure_seconds: float  # spent generating and scoring the held-out sample (part of `seconds`)


@dataclass
class ExactMatchStop(TrainerCallback):
    """Measures held-out exact match on check steps and tells the Trainer to stop per `stop_reason`."""

    measure: Callable[[PreTrainedModel], dict[str, float]]
    settings: TinySettings
    progress: Callable[[str], None] | None = None
    history: list[Check] = field(default_factory=list)
    reason: str | None = None
    started: float = field(default_factory=time.perf_counter)

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = time.perf_counter()
        return control

    def on_step_end(self, args, state, control, model=None, **kwargs):
        step, s = state.global_step, self.settings
        if not is_check_step(step, check_every=s.check_every, max_steps=s.max_steps):
            return control
        measure_started = time.perf_counter()
        by_language = self.measure(model)
        now = time.perf_counter()
        check = Check(step, macro_mean(by_language), by_language, now - self.started, now - measure_started)
        self.history.append(check)
        if self.progress:
            langs = " ".join(f"{lang} {em:.2f}" for lang, em in by_language.items())
            self.progress(f"step {step}: held-out exact match {check.exact_match:.3f} ({langs})")
        self.reason = stop_reason(step, check.exact_match, target=s.target_exact_match, max_steps=s.max_steps)
        if self.reason:
            control.should_training_stop = True
        return control


@dataclass(frozen=True)
class WarmStart:
    steps: int
    reason: str  # THRESHOLD or CAP
    history: list[Check]
    losses: list[tuple[int, float]]  # (step, mean training loss since the previous log)
    seconds: float


def sft_config(settings: TinySettings, output_dir: str):
    from trl import SFTConfig

    arguments = dict(
        output_dir=output_dir,
        max_steps=settings.max_steps,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        # Constant after warm-up: a decaying schedule would tie the learning rate at the threshold
        # to the cap, which is only a safety limit.
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=settings.warmup_steps,
        max_length=settings.max_positions,
        completion_only_loss=True,
        seed=settings.seed,
        data_seed=settings.seed,
        use_cpu=True,
        bf16=False,  # left unset, TRL turns bf16 on
        fp16=False,
        report_to="none",
        save_strategy="no",
        eval_strategy="no",
        logging_steps=settings.check_every,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    # TRL 1.16 itself passes the deprecated `gradient_checkpointing` field; that warning is not ours.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*", category=FutureWarning)
        return SFTConfig(**arguments)


def warm_start(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    train_records: list[dict],
    heldout_records: list[dict],
    settings: TinySettings,
    *,
    max_new_tokens: int,
    progress: Callable[[str], None] | None = None,
) -> WarmStart:
    """Train `model` in place on prompt -> reference pairs until held-out exact match is reached."""
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import SFTTrainer

    pairs = Dataset.from_list(
        [{"prompt": r["prompt"], "completion": completion_for(r["prompt"], r["reference"])} for r in train_records]
    )
    stopper = ExactMatchStop(
        measure=lambda m: exact_match_by_language(m, tokenizer, heldout_records, max_new_tokens=max_new_tokens)[0],
        settings=settings,
        progress=progress,
    )
    with tempfile.TemporaryDirectory(prefix="mlgrpo-sft-") as scratch:  # Trainer wants a folder; we save none
        trainer = SFTTrainer(
            model=model,
            args=sft_config(settings, scratch),
            train_dataset=pairs,
            processing_class=tokenizer,
            callbacks=[stopper],
        )
        trainer.remove_callback(PrinterCallback)  # it prints every log dict; `progress` reports instead
        started = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - started
    losses = [(e["step"], e["loss"]) for e in trainer.state.log_history if "loss" in e]
    return WarmStart(trainer.state.global_step, stopper.reason, stopper.history, losses, seconds)
