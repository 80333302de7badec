"""Build (or re-use) the embedded tiny base model: suite data -> tokenizer -> Qwen2 -> warm start -> folder.

Offline and reproducible: everything comes from the installed packages and `settings.seed`. The
result is a cached folder named by a hash of the settings (see `settings.folder_name`) holding
safetensors weights, the tokenizer, and build_info.json (settings, steps, measured exact match per
language, sample generations, wall time, versions, and the manifest that proves the folder complete).
Knows nothing about the CLI or about how the rest of the platform loads models.
"""

from __future__ import annotations

import contextlib
import json
import platform
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

from mlgrpo import __version__
from mlgrpo.errors import UserError
from mlgrpo.models.cache import BUILD_INFO, default_models_dir, file_manifest, is_complete, publish, staging
from mlgrpo.models.settings import TinySettings, folder_name, library_versions, settings_key

SAMPLES_PER_LANGUAGE = 3  # generations kept in build_info.json, to be read by a person
MAX_NEW_TOKENS_MARGIN = 8  # beyond the longest training completion: room to show overlong answers


def build_tiny(
    settings: TinySettings | None = None,
    *,
    models_dir: str | Path | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """The folder of the tiny model for `settings`, built now unless a complete one is cached.

    `models_dir` defaults to `cache.default_models_dir()`; `force` rebuilds even a complete folder.
    """
    settings = settings or TinySettings()
    root = Path(models_dir).expanduser() if models_dir else default_models_dir()
    final, key = root / folder_name(settings), settings_key(settings)
    if not force and is_complete(final, key):
        if progress:
            progress(f"re-using {final}")
        return final
    with staging(root, final.name) as tmp, _quiet_progress_bars():
        if progress:
            progress(f"building {final}")
        _build_into(tmp, settings, key, progress)
    return publish(tmp, final, key, replace=force)


def split_records(settings: TinySettings) -> tuple[list[dict], list[dict], list[dict]]:
    """Train records, the held-out sample measured during the warm start, and the final sample.

    Both samples come from the eval split, drawn per language with `settings.seed`, and do not
    overlap: the reported numbers are not measured on the prompts the stop was chosen on.
    """
    from mlgrpo.data.suites import load_suite

    common = dict(languages=list(settings.languages), prompt_style=settings.prompt_style, seed=settings.seed)
    count = settings.train_per_language
    per_language = {language: count for language in settings.languages} if count else None
    train = load_suite(settings.suite, split="train", per_language=per_language, **common)
    evaluation = load_suite(settings.suite, split="eval", **common)
    rng = random.Random(settings.seed)
    heldout, final = [], []
    for language in settings.languages:
        pool = [r for r in evaluation if r["language"] == language]
        rng.shuffle(pool)
        cut = settings.eval_per_language
        heldout += pool[:cut]
        final += pool[cut : cut + settings.final_eval_per_language]
    return train, heldout, final


def _build_into(tmp: Path, settings: TinySettings, key: str, progress: Callable[[str], None] | None) -> dict:
    from transformers import set_seed

    from mlgrpo.models.architecture import count_parameters
    from mlgrpo.models.greedy import exact_match_by_language, macro_mean
    from mlgrpo.models.warmstart import warm_start
    from mlgrpo.runtime import configure_threads

    started = time.perf_counter()
    threads = configure_threads()
    set_seed(settings.seed)
    train, heldout, final = split_records(settings)
    model, tokenizer, max_new_tokens = _fresh_model(settings, train)
    if progress:
        progress(f"{count_parameters(model):,} parameters, {len(train)} train pairs, "
                 f"{len(settings.languages)} languages, {threads} thread(s)")
    run = warm_start(model, tokenizer, train, heldout, settings, max_new_tokens=max_new_tokens, progress=progress)
    by_language, outputs = exact_match_by_language(model, tokenizer, final, max_new_tokens=max_new_tokens)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    _check_tokenizer_loads_identically(tmp, tokenizer, train + heldout + final)
    info = {
        "key": key,
        "kind": "mlgrpo tiny base model",
        "settings": settings.to_json(),
        "parameters": count_parameters(model),
        "vocab_size": len(tokenizer),
        "max_new_tokens": max_new_tokens,
        "train_pairs": len(train),
        "warm_start": _warm_start_facts(run, settings),
        "final_exact_match": {"macro": macro_mean(by_language), "by_language": by_language,
                              "per_language": settings.final_eval_per_language},
        "samples": _samples(final, outputs),
        "wall_seconds": round(time.perf_counter() - started, 2),
        "threads": threads,
        "versions": {"mlgrpo": __version__, "python": platform.python_version(), **library_versions()},
        "files": file_manifest(tmp),
    }
    (tmp / BUILD_INFO).write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if progress and not info["warm_start"]["in_target_window"]:
        progress(f"warning: the warm start stopped by {run.reason} at held-out exact match "
                 f"{run.history[-1].exact_match:.3f}, outside [{settings.target_exact_match}, "
                 f"{settings.saturated_exact_match}]: RL from this start has little room or little signal")
    return info


def _fresh_model(settings: TinySettings, train: list[dict]):
    """Tokenizer trained on the train split's prompts and answers, a seeded model, and a generation budget."""
    from mlgrpo.models.architecture import init_model
    from mlgrpo.models.tokenizer import train_tokenizer
    from mlgrpo.models.warmstart import completion_for

    completions = [completion_for(r["prompt"], answer) for r in train for answer in r["answers"]]
    tokenizer = train_tokenizer([r["prompt"] for r in train] + completions, settings.vocab_size)
    max_new_tokens = max(map(len, tokenizer(completions)["input_ids"])) + MAX_NEW_TOKENS_MARGIN
    _check_pairs_fit(train, tokenizer, settings.max_positions)
    model = init_model(settings, tokenizer)
    model.generation_config.max_new_tokens = max_new_tokens  # a sane default for whoever generates next
    return model, tokenizer, max_new_tokens


def _check_pairs_fit(train: list[dict], tokenizer, max_positions: int) -> None:
    """SFT would cut a longer prompt + answer silently (its max_length); say so before training."""
    from mlgrpo.models.warmstart import completion_for

    pairs = [r["prompt"] + completion_for(r["prompt"], r["reference"]) for r in train]
    lengths = [len(ids) + 1 for ids in tokenizer(pairs)["input_ids"]]  # +1: the EOS that SFT appends
    longest = max(range(len(train)), key=lengths.__getitem__)
    if lengths[longest] > max_positions:
        raise UserError(
            f"training pair {train[longest]['id']} is {lengths[longest]} tokens long, more than max_positions "
            f"{max_positions}; raise it (tiny option max_positions={lengths[longest]})"
        )


def _check_tokenizer_loads_identically(folder: Path, tokenizer, records: list[dict]) -> None:
    """Refuse to publish a tokenizer that AutoTokenizer would read back cutting the suite's text differently."""
    from transformers import AutoTokenizer

    from mlgrpo.models.tokenizer import mismatches

    texts = [text for r in records for text in (r["prompt"], *r["answers"])]
    bad = mismatches(tokenizer, AutoTokenizer.from_pretrained(folder), texts)
    if bad:
        raise RuntimeError(
            f"the trained tokenizer and the one AutoTokenizer loads from {folder} cut {len(bad)} of {len(texts)} "
            f"texts differently (first: {bad[0]!r}); transformers' Qwen2Tokenizer pipeline has changed, and "
            "mlgrpo.models.tokenizer must follow it"
        )


def _warm_start_facts(run, settings: TinySettings) -> dict:
    last = run.history[-1].exact_match
    return {
        "steps": run.steps,
        "stopped_by": run.reason,
        "in_target_window": settings.target_exact_match <= last <= settings.saturated_exact_match,
        "seconds": round(run.seconds, 2),
        "checks": [asdict(check) for check in run.history],
        "losses": run.losses,
    }


@contextlib.contextmanager
def _quiet_progress_bars() -> Iterator[None]:
    """Silence the per-map and per-shard bars of datasets and transformers, then restore them."""
    import datasets
    from transformers.utils import logging as hf_logging

    datasets_bars, hf_bars = not datasets.are_progress_bars_disabled(), hf_logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if datasets_bars:
            datasets.enable_progress_bars()
        if hf_bars:
            hf_logging.enable_progress_bar()


def _samples(records: list[dict], outputs: list[str]) -> dict[str, list[dict]]:
    from mlgrpo.models.greedy import is_exact_match

    samples: dict[str, list[dict]] = {}
    for record, output in zip(records, outputs):
        shown = samples.setdefault(record["language"], [])
        if len(shown) < SAMPLES_PER_LANGUAGE:
            shown.append({"prompt": record["prompt"], "reference": record["reference"], "output": output.strip(),
                          "exact_match": is_exact_match(output, record["answers"])})
    return samples
