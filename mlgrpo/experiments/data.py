"""The records a run trains and evaluates on, from a DataConfig and the run's seed, through the data layer.

    suite -> mlgrpo.data.suites.load_suite (train split, per_language subsample chosen by the seed)
    file  -> mlgrpo.data.readers.read_records -> languages filled in by mlgrpo.data.language
          -> train/eval by eval_file, or by a hash of each row's id -> per_language subsample

Arms cannot change the data section, and nothing here reads anything but the DataConfig, the seed
and the count of held-out prompts: every arm of a seed sees the same records in the same order.
The held-out prompts do not depend on the seed either (EVAL_SEED), so that every arm and every seed
is measured on the same prompts. Knows nothing about models, rewards, trainers or MLflow.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mlgrpo.errors import UserError
from mlgrpo.experiments.fields import FieldError
from mlgrpo.experiments.sections import DataConfig

EVAL_SEED = 0


@dataclass(frozen=True)
class FileRows:
    """A data file's usable rows and what was left out, for the plan's data summary."""

    records: tuple[dict, ...]
    dropped: dict[str, int]  # problem kind -> rows the reader could not use
    other_languages: dict[str, int]  # rows in a language the experiment does not train ("und" included)


def load_run_data(data: DataConfig, seed: int, languages: Sequence[str] | None = None, *,
                  eval_per_language: int | None = None) -> tuple[list[dict], list[dict]]:
    """(train records, eval records) for one run.

    languages          default: data.languages (a loaded experiment always has them)
    eval_per_language  held-out prompts per language (evaluation.per_language); None: the whole eval split
    Raises FieldError (a UserError) naming the data field at fault.
    """
    languages = tuple(languages or data.languages or ())
    train, held_out = split_records(data, languages, seed)
    check_languages(train, languages, "train")
    check_languages(held_out, languages, "eval")
    if eval_per_language is not None:
        held_out = take_per_language(held_out, languages, eval_per_language, EVAL_SEED, "eval_per_language")
    return train, held_out


def split_records(data: DataConfig, languages: Sequence[str], seed: int) -> tuple[list[dict], list[dict]]:
    """Train records (per_language subsample chosen by `seed`) and the whole eval split."""
    if data.suite is not None:
        from mlgrpo.data.suites import load_suite

        options = {"languages": list(languages), "eval_share": data.share, "prompt_style": data.prompt_style}
        counts = {code: n for code, n in (data.train_counts() or {}).items() if code in languages}
        try:
            train = load_suite(data.suite, split="train", per_language=counts or None, seed=seed, **options)
            held_out = load_suite(data.suite, split="eval", seed=EVAL_SEED, **options)
        except UserError as exc:
            # load_suite's two refusals here: a count above what a language has, or an unknown language.
            field = "per_language" if "but per_language asks for" in str(exc) else "languages"
            raise FieldError(field, str(exc)) from None
        return train, held_out
    rows = read_file_rows(data, languages)
    if data.eval_file is not None:
        train = list(rows.records)
        held_out = list(read_file_rows(data, languages, eval_file=True).records)
    else:
        from mlgrpo.data.suites import item_split

        split = [item_split("file", record["id"], data.share) for record in rows.records]
        train = [r for r, s in zip(rows.records, split, strict=True) if s == "train"]
        held_out = [r for r, s in zip(rows.records, split, strict=True) if s == "eval"]
    counts = data.train_counts()
    if counts:
        train = take_per_language(train, [c for c in languages if c in counts], None, seed, "per_language", counts)
    return train, held_out


def read_file_rows(data: DataConfig, languages: Sequence[str] | None, eval_file: bool = False) -> FileRows:
    """A data file's records in `languages` (None: every identified language), languages filled in."""
    from mlgrpo.data.language import assign_languages, identifier_for
    from mlgrpo.data.readers import read_records

    path = data.eval_file if eval_file else data.file
    field = "eval_file" if eval_file else "file"
    options = {key: value for key, value in (("encoding", data.encoding), ("prompt_field", data.prompt_field),
                                             ("language_field", data.language_field),
                                             ("reference_field", data.reference_field)) if value is not None}
    try:
        records, log, _ = read_records(path, **options)
        records, _ = assign_languages(records, identifier_for(list(languages) if languages else None))
    except UserError as exc:
        raise FieldError(field, str(exc)) from None
    dropped = Counter(p.kind for p in log.problems if p.dropped)
    def wanted(record: dict) -> bool:
        return record["language"] != "und" and (not languages or record["language"] in languages)

    others = Counter(r["language"] for r in records if not wanted(r))
    return FileRows(tuple(r for r in records if wanted(r)), dict(dropped), dict(others))


def check_languages(records: Sequence[dict], languages: Sequence[str], split: str) -> None:
    """Every language of the experiment has rows in this split."""
    present = Counter(record["language"] for record in records)
    empty = [code for code in languages if not present[code]]
    if empty:
        raise FieldError("languages", f"no {split} rows in {', '.join(map(repr, empty))}: a language with no data "
                                      "cannot be trained or measured; remove it or add rows")


def take_per_language(records: Sequence[dict], languages: Sequence[str], count: int | None, seed: int, field: str,
                      counts: dict[str, int] | None = None) -> list[dict]:
    """`count` (or counts[language]) records of each language, chosen by a seeded hash of their ids and
    kept in their original order; languages not listed keep every record.

    Ranking by hash makes the choice nested: the 20 rows kept for a count of 20 are among the 40 kept
    for 40, whatever the other languages hold.
    """
    by_language: dict[str, list[dict]] = {}
    for record in records:
        by_language.setdefault(record["language"], []).append(record)
    chosen: set[str] = set()
    for code in languages:
        wanted = counts[code] if counts else count
        rows = by_language.get(code, [])
        if wanted > len(rows):
            raise FieldError(field, f"asks for {wanted} rows in {code!r}, but that split has {len(rows)}; "
                                    f"ask for at most {len(rows)}")
        ranked = sorted(rows, key=lambda r: hashlib.sha256(f"{seed}/{r['id']}".encode()).digest())
        chosen.update(r["id"] for r in ranked[:wanted])
    listed = set(languages)
    return [r for r in records if r["language"] not in listed or r["id"] in chosen]


def language_table(train: Sequence[dict], held_out: Sequence[dict],
                   languages: Sequence[str]) -> dict[str, tuple[int, int]]:
    """{language: (train rows, eval rows)} in the experiment's language order."""
    n_train, n_eval = Counter(r["language"] for r in train), Counter(r["language"] for r in held_out)
    return {code: (n_train[code], n_eval[code]) for code in languages}
