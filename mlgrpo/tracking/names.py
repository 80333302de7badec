"""Metric names as MLflow shows them, and the per-language aggregates added to every log call.

Scheme: `<split>/<metric>/<lang>`. The language is always the LAST path part, so that searching the
MLflow UI for "train/reward/" lays out one chart per language side by side, next to the aggregates:

    train/reward/en, train/reward/ja, ...   one per language, from the trainer's "reward/<lang>"
    train/reward/macro                      mean over the languages that have a value this step
    train/reward/worst                      the worst language: min, or max where lower is better
    train/reward/all                        the trainer's pooled value (TRL's "reward"), renamed so that
                                            it does not sit beside "train/reward/" as a sibling name
    train/rewards/exact_match/en            reward functions keep their "rewards/<fn>" path
    train/loss, train/kl                    metrics without a language keep their name under the split
    system/samples_per_sec                  process figures stay under system/ (system/eval/... in eval)

Which way is worse is a registry (first matching pattern wins): descriptive statistics (std, counts,
lengths, advantages) get a macro but no worst; losses, KL, perplexity and error rates are worse when
higher; everything else (rewards, exact match, chrF, BLEU, consistency) is worse when lower.

Pure functions over names and floats; imports neither mlflow nor transformers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from functools import lru_cache

SPLITS = ("train", "eval")
AGGREGATES = ("macro", "worst", "all")
HIGHER, LOWER, DESCRIPTIVE = "higher", "lower", "descriptive"

# Characters MLflow accepts in metric, param and tag names (POSIX): word characters, - . space : /
_INVALID_CHARS = re.compile(r"[^\w.\- :/]")
# Hugging Face's end-of-run and per-evaluation timing keys: not step metrics, so kept apart.
_HF_SUMMARY_EVAL = ("runtime", "samples_per_second", "steps_per_second")

_DIRECTIONS: list[tuple[str, str]] = []


# Names repeat every step: the lookups below are cached (a step of ~100 keys costs ~0.1 ms, not ~1 ms).
@lru_cache(maxsize=4096)
def direction(metric: str) -> str:
    """HIGHER, LOWER or DESCRIPTIVE for a metric name without split and language ("reward", "ppo/value_loss").

    >>> direction("reward"), direction("ppo/value_loss"), direction("reward_std")
    ('higher', 'lower', 'descriptive')
    """
    for pattern, found in _DIRECTIONS:
        if fnmatchcase(metric, pattern):
            return found
    return HIGHER


def register_direction(pattern: str, way: str) -> None:
    """Say which way a metric (its name without split and language, fnmatch pattern) gets worse."""
    if way not in (HIGHER, LOWER, DESCRIPTIVE):
        raise ValueError(f"direction must be {HIGHER!r}, {LOWER!r} or {DESCRIPTIVE!r}, not {way!r}")
    if any(existing == pattern for existing, _ in _DIRECTIONS):
        raise ValueError(f"a direction for metric pattern {pattern!r} is already registered")
    _DIRECTIONS.append((pattern, way))
    direction.cache_clear()  # answers given before may change


for _pattern in ("*_std", "*/std", "samples", "sampler/*", "*length*", "adv/*", "groups/*", "*count*",
                 "num_*", "*tokens*", "epoch", "learning_rate", "grad_norm", "entropy", "*clip*"):
    register_direction(_pattern, DESCRIPTIVE)
for _pattern in ("loss", "*loss", "kl", "*/kl", "kl_*", "*_kl", "*/kl_*", "perplexity", "*ppl*", "wer", "cer", "ter",
                 "*error*", "code_switch", "*toxic*", "collapse", "ppo/kl_penalty"):
    register_direction(_pattern, LOWER)
register_direction("reward_guard/*", DESCRIPTIVE)  # counts of bad rewards per function, not per language


def clean_name(name: str) -> str:
    """A name MLflow accepts: other characters become "_", empty, "." and ".." path parts are dropped.

    MLflow rejects names that a filesystem would read differently ("a//b", "a/./b", "/a").

    >>> clean_name("rewards/my reward!/zh-Hans")
    'rewards/my reward_/zh-Hans'
    """
    parts = [p for p in _INVALID_CHARS.sub("_", name).split("/") if p not in ("", ".", "..")]
    return "/".join(parts)


@lru_cache(maxsize=16384)
def metric_name(split: str, raw: str) -> str:
    """The MLflow name of a trainer or evaluation metric.

    >>> metric_name("train", "reward/en"), metric_name("eval", "eval_exact_match/ja")
    ('train/reward/en', 'eval/exact_match/ja')
    >>> metric_name("train", "system/peak_memory_mb"), metric_name("train", "train_runtime")
    ('system/peak_memory_mb', 'train/summary/runtime')
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    name = raw.removeprefix("eval_") if split == "eval" else raw
    if name.startswith("system/"):
        return clean_name(name if split == "train" else "system/eval/" + name.removeprefix("system/"))
    if split == "train" and (name.startswith("train_") or name == "total_flos"):
        return clean_name("train/summary/" + name.removeprefix("train_"))
    if split == "eval" and name in _HF_SUMMARY_EVAL:
        return clean_name("eval/summary/" + name)
    if name.startswith(split + "/"):
        return clean_name(name)
    return clean_name(f"{split}/{name}")


def split_language(name: str, languages: Sequence[str]) -> tuple[str, str | None]:
    """("train/reward", "en") for "train/reward/en"; (name, None) when the last part is no language."""
    return _split_language(name, tuple(languages))


@lru_cache(maxsize=16384)
def _split_language(name: str, languages: tuple[str, ...]) -> tuple[str, str | None]:
    head, _, last = name.rpartition("/")
    return (head, last) if head and last in languages else (name, None)


def _as_float(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]  # tensors, numpy scalars, ints
    except (TypeError, ValueError):
        return None


def _metric_part(prefix: str) -> str:
    """"train/rewards/exact_match" -> "rewards/exact_match": what the direction registry matches."""
    return prefix.split("/", 1)[1] if "/" in prefix else prefix


def aggregates(named: Mapping[str, float | None], languages: Sequence[str]) -> dict[str, float]:
    """`<prefix>/macro` and `<prefix>/worst` for every prefix that has per-language values.

    Macro is the unweighted mean over the languages with a finite value; worst is their min (max for
    LOWER metrics); DESCRIPTIVE metrics get no worst. system/ metrics are not aggregated.

    >>> aggregates({"train/reward/en": 0.5, "train/reward/ja": 0.25, "train/kl/en": 0.1, "train/kl/ja": 0.3},
    ...            ["en", "ja"])  # reward: (0.5 + 0.25) / 2; kl: worst is the larger
    {'train/reward/macro': 0.375, 'train/reward/worst': 0.25, 'train/kl/macro': 0.2, 'train/kl/worst': 0.3}
    """
    languages = tuple(languages)
    groups: dict[str, list[float]] = {}
    for name, value in named.items():
        prefix, language = _split_language(name, languages)
        if language is None or name.startswith("system/") or value is None or not math.isfinite(value):
            continue
        groups.setdefault(prefix, []).append(value)
    out: dict[str, float] = {}
    for prefix, values in groups.items():
        out[f"{prefix}/macro"] = sum(values) / len(values)
        way = direction(_metric_part(prefix))
        if way != DESCRIPTIVE:
            out[f"{prefix}/worst"] = max(values) if way == LOWER else min(values)
    return out


def tracked_metrics(logs: Mapping[str, object], languages: Sequence[str],
                    split: str | None = None) -> dict[str, float | None]:
    """One log call in MLflow names, with aggregates; values that are not numbers become None.

    `split=None` reads the split from each key, as the Hugging Face Trainer writes them: "eval_" keys
    are evaluation, the rest training. A pooled value whose name is also the prefix of per-language
    names ("reward" beside "reward/en") is renamed "<name>/all".

    >>> tracked_metrics({"reward": 0.4, "reward/en": 0.5, "reward/ja": 0.3, "loss": 1.5}, ["en", "ja"])
    ... # doctest: +NORMALIZE_WHITESPACE
    {'train/reward/all': 0.4, 'train/reward/en': 0.5, 'train/reward/ja': 0.3, 'train/loss': 1.5,
     'train/reward/macro': 0.4, 'train/reward/worst': 0.3}
    """
    languages = tuple(languages)
    named: dict[str, float | None] = {}
    for raw, value in logs.items():
        key_split = split or ("eval" if raw.startswith("eval_") else "train")
        named[metric_name(key_split, raw)] = _as_float(value)
    parts = [_split_language(name, languages) for name in named]
    prefixes = {prefix for prefix, language in parts if language}
    named = {(f"{name}/all" if name in prefixes else name): value for name, value in named.items()}
    return {**named, **aggregates(named, languages)}


def generations_table(split: str, step: int) -> str:
    """Artifact file for the sample generations of one evaluation: "eval/generations/step_0000100.json"."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    return f"{split}/generations/step_{step:07d}.json"
