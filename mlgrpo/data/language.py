"""Every record gets a language: the source's own code when it gave one, else mlgrpo.langid's answer.

The source is trusted over identification: a file that says "de" is German even where a short
prompt looks Dutch. Rows the identifier cannot decide (no letters, garbled, mixed) are "und".
Knows nothing about files, formats or the CLI.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from mlgrpo.langid import LanguageIdentifier


def identifier_for(candidates: Sequence[str] | None, backend: str = "default") -> LanguageIdentifier:
    """The identifier to use; made before reading so that bad candidates fail fast (UserError)."""
    return LanguageIdentifier(list(candidates) if candidates is not None else None, backend)


def assign_languages(records: list[dict], identifier: LanguageIdentifier) -> tuple[list[dict], int]:
    """(records with `language` filled in, how many of them were identified rather than given)."""
    missing = [i for i, record in enumerate(records) if record["language"] is None]
    guesses = identifier.identify_many(records[i]["prompt"] for i in missing)
    found = dict(zip(missing, (guess.language for guess in guesses)))
    out = [record if i not in found else {**record, "language": found[i]} for i, record in enumerate(records)]
    return out, len(missing)


def language_counts(records: list[dict]) -> list[tuple[str, int]]:
    """(language, rows), most rows first, ties by code."""
    counts = Counter(record["language"] for record in records)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
