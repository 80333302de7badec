"""The held-out records a standalone evaluation reads, from a data SPEC:

    suite:NAME   the eval split of a built-in suite (mlgrpo.data.suites.load_suite(..., split="eval"))
    PATH         a data file or folder (mlgrpo.data.readers.read_records); rows without a language
                 get one from language ID, as `mlgrpo data prepare` does

Every row that is read and not evaluated is accounted for in the notes (dropped while reading, or
not in the chosen languages). Knows nothing about models, metrics or MLflow.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlgrpo.errors import UserError

SUITE_PREFIX = "suite:"


def _check_count(per_language: int | None) -> None:
    if per_language is not None and (isinstance(per_language, bool) or not isinstance(per_language, int)
                                     or per_language < 1):
        raise UserError(f"per_language must be a whole number of at least 1, got {per_language!r}")


def load_eval_records(spec: str, *, languages: Sequence[str] | None = None, per_language: int | None = None,
                      seed: int = 0) -> tuple[list[dict], list[str]]:
    """(records, notes) for `spec`, limited to `languages` and to `per_language` rows per language."""
    _check_count(per_language)
    if spec.startswith(SUITE_PREFIX):
        from mlgrpo.data.suites import available_suites, load_suite

        name = spec[len(SUITE_PREFIX):].strip()
        if not name:
            raise UserError(f"data {spec!r} names no suite; write suite:NAME, e.g. suite:numbers")
        if name in available_suites() and per_language:  # the suite's seeded subsample of every language
            chosen = list(languages) if languages else list(available_suites()[name].languages)
            return load_suite(name, languages=chosen, split="eval", per_language=dict.fromkeys(chosen, per_language),
                              seed=seed), []
        return load_suite(name, languages=list(languages) if languages else None, split="eval", seed=seed), []
    return _file_records(spec, languages, per_language)


def _file_records(path: str, languages: Sequence[str] | None,
                  per_language: int | None) -> tuple[list[dict], list[str]]:
    from mlgrpo.data.language import assign_languages, identifier_for
    from mlgrpo.data.readers import read_records

    records, log, info = read_records(path)
    notes = []
    if log.dropped:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(log.counts().items()))
        notes.append(f"{info.source}: {log.dropped} of {info.rows} rows could not be read and are not evaluated "
                     f"({kinds}); `mlgrpo data inspect {path}` lists them")
    records, identified = assign_languages(records, identifier_for(None))
    if identified:
        notes.append(f"{identified} row(s) had no language; language ID gave one (or 'und')")
    if languages:
        wanted = set(languages)
        kept = [r for r in records if r["language"] in wanted]
        missing = sorted(wanted - {r["language"] for r in kept})
        if missing:
            raise UserError(f"{info.source} has no rows in {', '.join(missing)}; its languages: "
                            f"{', '.join(sorted({r['language'] for r in records}))}")
        if len(kept) < len(records):
            notes.append(f"{len(records) - len(kept)} row(s) in other languages than {', '.join(languages)} "
                         "are not evaluated")
        records = kept
    if per_language:
        before = len(records)
        records = first_per_language(records, per_language)
        if len(records) < before:
            notes.append(f"only the first {per_language} rows of each language are evaluated ({before - len(records)} "
                         "not evaluated)")
    if not records:
        raise UserError(f"{info.source} has no rows to evaluate")
    return records, notes


def first_per_language(records: Sequence[dict], count: int) -> list[dict]:
    """The first `count` records of each language, in their order.

    >>> [r["id"] for r in first_per_language([{"id": 1, "language": "sw"}, {"id": 2, "language": "sw"},
    ...                                       {"id": 3, "language": "ja"}], 1)]
    [1, 3]
    """
    seen: dict[str, int] = {}
    kept = []
    for record in records:
        language = record.get("language")
        if seen.get(language, 0) < count:
            seen[language] = seen.get(language, 0) + 1
            kept.append(record)
    return kept
