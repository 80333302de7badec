"""`mlgrpo data prepare`: a user's source to clean, language-tagged UTF-8 JSONL, written atomically.

Reads with mlgrpo.data.readers, fills in languages with mlgrpo.data.language, and writes through a
temporary file in the output's folder renamed into place, so that OUT is either the old file or the
complete new one, never half-written. Knows nothing about models, trainers or MLflow.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlgrpo.data.language import assign_languages, identifier_for, language_counts
from mlgrpo.data.readers import ReadInfo, read_records
from mlgrpo.data.records import ProblemLog
from mlgrpo.errors import DataError, UserError

PROBLEMS_SHOWN = 10  # problems printed in the summary; --problems writes them all


@dataclass(frozen=True)
class PrepareSummary:
    info: ReadInfo
    out: str
    written: int
    identified: int  # rows whose language came from language ID, not from the source
    languages: list[tuple[str, int]]  # most rows first
    log: ProblemLog
    problems_path: str | None

    def dropped(self) -> dict[str, int]:
        return dict(Counter(p.kind for p in self.log.problems if p.dropped))

    def warnings(self) -> dict[str, int]:
        return dict(Counter(p.kind for p in self.log.problems if not p.dropped))


def _same_file(a: Path, b: Path) -> bool:
    return a.exists() and b.exists() and os.path.samefile(a, b)


def check_writable(path: Path, source: Any = None) -> None:
    """Fail before any work when `path` cannot be written (folder missing, not a folder, read-only) or is
    the input file `source` (writing there would destroy the data being read)."""
    folder = path.parent
    if not folder.exists():
        raise UserError(f"cannot write {path}: the folder {folder} does not exist; create it first")
    if not folder.is_dir():
        raise UserError(f"cannot write {path}: {folder} is not a folder")
    if path.is_dir():
        raise UserError(f"cannot write {path}: it is a folder; give a file name such as {path / 'prepared.jsonl'}")
    if not os.access(folder, os.W_OK):
        raise UserError(f"cannot write {path}: no permission to write in {folder}")
    if isinstance(source, (str, Path)) and _same_file(path, Path(source)):
        raise UserError(f"{path} is the input file; write to another file")


def _jsonable(value: Any) -> Any:
    """Parquet and datasets values that JSON has no type for, as text (dates ISO 8601)."""
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if hasattr(value, "item") and not isinstance(value, (bytes, bytearray)):  # numpy scalars
        return value.item()
    raise TypeError(f"a {type(value).__name__} value cannot be written as JSON")


def _finite(value: Any) -> Any:
    # NaN is how pandas and Arrow spell "missing"; strict JSON has no NaN, so it becomes null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def to_json_line(record: dict) -> str:
    try:
        try:
            return json.dumps(record, ensure_ascii=False, allow_nan=False, default=_jsonable)
        except ValueError:
            return json.dumps(_finite(record), ensure_ascii=False, allow_nan=False, default=_jsonable)
    except TypeError as exc:
        raise DataError(f"{record.get('id', 'a row')}: {exc}; drop or convert that column first") from None


def write_lines_atomic(path: Path, lines: Iterable[str]) -> None:
    """Write `lines` (one per line, UTF-8) to `path` through a temporary file and a rename."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            for line in lines:
                handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~umask)  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise UserError(f"cannot write {path}: {exc.strerror}") from None
        raise


def prepare(
    source: Any,
    out: str | Path,
    *,
    problems: str | Path | None = None,
    candidates: Sequence[str] | None = None,
    backend: str = "default",
    **read_options: Any,
) -> PrepareSummary:
    """Read `source`, give every record a language, write `out` as UTF-8 JSONL.

    `read_options` go to read_records (encoding, prompt_field, language_field, strict, ...).
    `problems`, when given, receives every problem as JSONL, also when the input is unusable.
    Raises DataError when no row is usable, UserError when an output cannot be written.
    """
    out = Path(out)
    if problems and Path(problems).resolve() == out.resolve():
        raise UserError(f"{out} is named for both --out and --problems; give the problems their own file")
    for path in (out, Path(problems)) if problems else (out,):
        check_writable(path, source)
    identifier = identifier_for(candidates, backend)
    records, log, info = read_records(source, **read_options)
    if problems:
        write_lines_atomic(Path(problems), (json.dumps(p, ensure_ascii=False) for p in log.to_json()))
    if not records:
        first = f"; first: {log.problems[0]}" if log.problems else ""
        raise DataError(f"{info.source}: no usable rows ({info.rows} read, {log.dropped} dropped){first}")
    records, identified = assign_languages(records, identifier)
    write_lines_atomic(out, (to_json_line(record) for record in records))
    return PrepareSummary(info, str(out), len(records), identified, language_counts(records), log,
                          str(problems) if problems else None)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def format_summary(summary: PrepareSummary) -> str:
    info = summary.info
    dropped, warnings = summary.dropped(), summary.warnings()
    total = summary.written
    languages = ", ".join(f"{code} {n} ({100 * n / total:.1f}%)" for code, n in summary.languages)
    lines = [
        f"read      {info.rows} rows from {info.source} ({info.format})",
        f"encoding  {info.describe_encoding()}",
        f"wrote     {summary.written} rows to {summary.out}",
        f"dropped   {sum(dropped.values())}" + (f": {_counts(dropped)}" if dropped else ""),
        f"warnings  {sum(warnings.values())}" + (f": {_counts(warnings)}" if warnings else ""),
        f"languages {languages} ({summary.written - summary.identified} given, {summary.identified} identified)",
    ]
    shown = summary.log.problems[:PROBLEMS_SHOWN]
    if summary.problems_path:
        lines.append(f"problems  all {len(summary.log.problems)} in {summary.problems_path}")
    lines += [f"  {problem}" for problem in shown]
    hidden = len(summary.log.problems) - len(shown)
    if hidden > 0 and not summary.problems_path:
        lines.append(f"  ... {hidden} more (write them all with --problems FILE)")
    return "\n".join(lines)
