"""A tiny policy, tokenizer and real multilingual prompts (the numbers suite) for trainer tests.

The model is random (no warm start): trainer tests check mechanics (advantages, parameters, metrics,
checkpoints), not learning; learning is shown by the quickstart and its recorded numbers.
"""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from transformers import TrainerCallback

from mlgrpo.data.suites import load_suite
from mlgrpo.models.architecture import init_model
from mlgrpo.models.settings import TinySettings
from mlgrpo.models.tokenizer import train_tokenizer

LANGUAGES = ("en", "ru", "ja", "sw")
SETTINGS = TinySettings(languages=LANGUAGES, vocab_size=400, hidden_size=32, num_layers=1, num_heads=2,
                        intermediate_size=64, seed=0)


def build_records() -> list[dict]:
    rows = load_suite("numbers", languages=list(LANGUAGES), split="train", seed=0)
    by_language: dict[str, list[dict]] = {}
    for row in rows:
        by_language.setdefault(row["language"], []).append(row)
    return [row for lang in LANGUAGES for row in by_language[lang][:24]]


def build_tokenizer():
    return train_tokenizer([r["prompt"] + " " + r["reference"] for r in build_records()], SETTINGS.vocab_size)


def build_dataset() -> Dataset:
    keep = ("prompt", "reference", "answers", "language", "task")
    return Dataset.from_list([{k: r[k] for k in keep} for r in build_records()])


def make_policy(tokenizer):
    torch.manual_seed(0)
    return init_model(SETTINGS, tokenizer)


@pytest.fixture(scope="session")
def tokenizer():
    return build_tokenizer()


@pytest.fixture
def make_model(tokenizer):
    return lambda: make_policy(tokenizer)


@pytest.fixture(scope="session")
def dataset() -> Dataset:
    return build_dataset()


def length_reward(completions, **kwargs):
    """A reward that varies within every group, so that every group has a spread."""
    return [len(c) / 10.0 for c in completions]


def grpo_args(output_dir, **overrides):
    from trl import GRPOConfig

    settings = dict(
        output_dir=str(output_dir), use_cpu=True, bf16=False, fp16=False, report_to="none", num_generations=4,
        per_device_train_batch_size=8, max_completion_length=6, max_steps=2, save_strategy="no", seed=0,
        logging_steps=1, learning_rate=1e-3, disable_tqdm=True,
    )
    settings.update(overrides)
    return GRPOConfig(**settings)


class StepsTrained(TrainerCallback):
    """The optimiser steps this trainer ran (a resumed one: only those after its checkpoint)."""

    def __init__(self) -> None:
        self.steps: list[int] = []

    def on_step_end(self, args, state, control, **kwargs):
        self.steps.append(state.global_step)
