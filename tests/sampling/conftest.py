"""A 20:5:1 imbalanced prompt set from real data that ships in babel (CLDR language names)."""

from __future__ import annotations

import pytest
from babel import Locale

# 600 English, 150 Russian and 30 Swahili rows: the largest language has 20 times the smallest.
ROWS = {"en": 600, "ru": 150, "sw": 30}


def language_name_records(rows: dict[str, int]) -> list[dict]:
    """Records (mlgrpo/data/records.py format) asking for a language's name in the prompt language."""
    records = []
    for lang, n in rows.items():
        names = sorted(Locale(lang).languages.items())[:n]
        assert len(names) == n, f"babel has only {len(names)} language names in {lang}"
        for i, (code, name) in enumerate(names):
            records.append({
                "id": f"babel/{lang}/{i}", "prompt": f"[{lang}] {code} ->", "reference": name,
                "answers": [name], "language": lang, "task": "language-names",
            })
    return records


@pytest.fixture(scope="session")
def records() -> list[dict]:
    return language_name_records(ROWS)


@pytest.fixture(scope="session")
def languages(records) -> list[str]:
    return [r["language"] for r in records]
