"""The record every stage downstream of the data layer sees, and the ledger of rows that had problems.

A record is a plain dict (so that it travels through `datasets`, TRL and reward functions as is):

    id         str        stable id, "<source>:<row>" for user files, "<suite>/<lang>/<n>" for suites
    prompt     str        the text given to the policy (NFC)
    reference  str | None the preferred answer, when the task has one
    answers    list[str]  every accepted answer (reference first); empty when the task has none
    language   str        ISO 639-1 code, or "und" when undetermined
    task       str        task family ("numbers", "countries", "ui", ... or the user's)
    ...        any        extra columns pass through untouched; reward functions receive them

The ledger (`ProblemLog`) is how "never silently drop a row" is kept: a row that is not written is
in the ledger with its file and row number, and `strict` turns the first error into an exception.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from mlgrpo.errors import DataError

UNDETERMINED = "und"
STANDARD_FIELDS = ("id", "prompt", "reference", "answers", "language", "task")


@dataclass(frozen=True)
class Problem:
    source: str  # file path or dataset name
    row: int | None  # 1-based row (line for JSONL/CSV/TSV, element for JSON arrays); None: whole file
    kind: str  # "undecodable", "empty", "mojibake", "bad_json", "missing_prompt", ...
    message: str  # what was wrong and what to do, for a person
    dropped: bool  # True: the row is not in the output; False: kept with a warning

    def __str__(self) -> str:
        where = f"{self.source}:{self.row}" if self.row is not None else self.source
        verdict = "dropped" if self.dropped else "kept"
        return f"{where}: {self.kind} ({verdict}): {self.message}"


@dataclass
class ProblemLog:
    """Every problem found while reading, in order. `strict=True` raises on the first dropped row."""

    strict: bool = False
    problems: list[Problem] = field(default_factory=list)

    def add(self, source: str, row: int | None, kind: str, message: str, *, dropped: bool) -> None:
        problem = Problem(source, row, kind, message, dropped)
        if self.strict and dropped:
            raise DataError(f"{problem} (strict mode stops at the first bad row)")
        self.problems.append(problem)

    @property
    def dropped(self) -> int:
        return sum(p.dropped for p in self.problems)

    def counts(self) -> dict[str, int]:
        return dict(Counter(p.kind for p in self.problems))

    def to_json(self) -> list[dict]:
        return [asdict(p) for p in self.problems]
