"""Any supported source to prompt records (mlgrpo.data.records), with every row accounted for.

    records, log, info = read_records("train.csv", prompt_field="question")

A row becomes a record, or a dropped entry in the ProblemLog (missing or non-text prompt, empty,
undecodable, bad JSON, ...), or a record with a warning (mojibake, lone surrogates, an unknown
language code). Text is NFC. Languages given in the source are normalised to ISO 639-1 here;
rows without one keep `language=None` for mlgrpo.data.language to identify.
Knows nothing about models, trainers or MLflow, and runs no language identification.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlgrpo.data.encoding import repair_mojibake
from mlgrpo.data.formats import Table, dataset_table, pick_split, snippet, source_table
from mlgrpo.data.records import STANDARD_FIELDS, ProblemLog
from mlgrpo.errors import UserError
from mlgrpo.langid.codes import parse_code
from mlgrpo.text import is_legacy_mojibake, is_mojibake, normalize, scrub_surrogates

# A detected encoding that leads the runner-up by less than this (nats; e^5 = 148 times as likely)
# gets a warning. Measured on 990 files of 1-10 rows in 33 locale/codec pairs: it flags 35 of the 36
# wrong detections, and 20% of the right ones among 10-row files (a false alarm costs one line).
UNCERTAIN_MARGIN = 5.0
_MISSING = object()
# mlgrpo.text.has_lone_surrogate loops in Python; this scan runs at C speed on every value of every row.
_SURROGATE = re.compile("[\ud800-\udfff]")


class _BadRow(Exception):
    """A row that cannot become a record: the problem kind, and a message saying why."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Fields:
    """Which source column holds each standard field."""

    prompt: str = "prompt"
    reference: str = "reference"
    answers: str = "answers"
    language: str = "language"
    task: str = "task"


@dataclass(frozen=True)
class ReadInfo:
    source: str  # as the user named it
    format: str  # "jsonl", "json", "csv", "tsv", "parquet", "dataset", "saved_dataset", "folder", "hub"
    encoding: str | None  # codec the text was decoded with; None where the format fixes it
    encoding_method: str | None  # "given", "bom", "utf-8" (valid UTF-8), "detected"; None as above
    runner_up: str | None  # detected: the next most likely codec
    margin: float | None  # detected: how much more likely the chosen codec is (nats, a lower bound)
    rows: int  # rows in the input: records returned + rows dropped
    columns: tuple[str, ...]  # source columns, in order of first appearance

    def describe_encoding(self) -> str:
        if self.encoding is None:
            return f"n/a ({self.format} stores decoded text)"
        if self.encoding_method == "detected" and self.runner_up:
            return f"{self.encoding} (detected; next most likely {self.runner_up})"
        return f"{self.encoding} ({self.encoding_method})"


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str) and not value.strip())


def _kind(value: Any) -> str:
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name} ({snippet(str(value))})"


def _texts(value: Any, what: str) -> list[str]:
    """The answers in one field: text, a number, or a list of them; missing values give none."""
    if _is_missing(value):
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [str(int(value)) if float(value).is_integer() else repr(value)]
    if isinstance(value, (list, tuple)) and not any(isinstance(item, (list, tuple, dict)) for item in value):
        return [text for item in value for text in _texts(item, what)]
    raise _BadRow("bad_reference", f"{what} is {_kind(value)}, not text, a number or a list of them")


def _answers_value(value: Any) -> Any:
    """CSV cannot hold lists: an answers cell like '["3", "three"]' is read as the list it spells."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, list) else value
    return value


def _scrub(value: Any) -> tuple[Any, bool]:
    """`value` with lone surrogates replaced (they cannot be written as UTF-8), and whether any were."""
    if isinstance(value, str):
        return (scrub_surrogates(value), True) if _SURROGATE.search(value) else (value, False)
    if isinstance(value, list):
        items = [_scrub(v) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    if isinstance(value, dict):
        pairs = [(_scrub(k), _scrub(v)) for k, v in value.items()]
        return {k: v for (k, _), (v, _) in pairs}, any(ck or cv for (_, ck), (_, cv) in pairs)
    return value, False


class _RecordBuilder:
    """Turns the rows of one table into records, booking problems in `log`."""

    def __init__(self, table: Table, fields: Fields, task: str, log: ProblemLog, fix_mojibake: bool):
        self.table, self.fields, self.task, self.log, self.fix = table, fields, task, log, fix_mojibake
        self.consumed = {fields.prompt, fields.reference, fields.answers, fields.language, fields.task}
        self.renamed: set[str] = set()

    def warn(self, row: int | None, kind: str, message: str) -> None:
        self.log.add(self.table.label, row, kind, message, dropped=False)

    def build(self, row: int, raw: dict) -> dict | None:
        try:
            prompt = self._prompt(raw)
            references = _texts(raw.get(self.fields.reference), repr(self.fields.reference))
            listed = _texts(_answers_value(raw.get(self.fields.answers)), repr(self.fields.answers))
        except _BadRow as exc:
            self.log.add(self.table.label, row, exc.kind, str(exc), dropped=True)
            return None
        issues: dict[str, list[str]] = {}
        prompt = self._clean(prompt, "prompt", issues)
        answers = list(dict.fromkeys(self._clean(a, "reference", issues) for a in references + listed))
        record = {
            "id": f"{self.table.name}:{row}",
            "prompt": prompt,
            "reference": answers[0] if answers else None,
            "answers": answers,
            "language": self._language(raw.get(self.fields.language), row),
            "task": self._task(raw.get(self.fields.task)),
        }
        self._extras(raw, record, issues)
        self._report(row, issues)
        return record

    def _prompt(self, raw: dict) -> str:
        field = self.fields.prompt
        prompt = raw.get(field, _MISSING)
        if prompt is _MISSING:
            keys = ", ".join(map(repr, raw)) or "none"
            raise _BadRow("missing_prompt", f"no {field!r} field (fields here: {keys}); name the prompt field with --prompt-field")
        if prompt is None:
            raise _BadRow("missing_prompt", f"the prompt {field!r} is null")
        if not isinstance(prompt, str):
            raise _BadRow("bad_prompt", f"the prompt {field!r} is {_kind(prompt)}, not text")
        if not prompt.strip():
            raise _BadRow("empty", f"the prompt {field!r} is empty")
        return prompt

    def _clean(self, text: str, what: str, issues: dict[str, list[str]]) -> str:
        """NFC, no lone surrogates; mojibake reported (and repaired when asked and possible)."""
        if text.isascii():  # nothing to normalise, nothing garbled: most rows of most datasets
            return text
        probe = text
        if _SURROGATE.search(text):  # judged without them: a bad escape is not a wrong codec
            probe = _SURROGATE.sub("", text)
            text = scrub_surrogates(text)
            issues.setdefault("surrogate", []).append(what)
        text = normalize(text)
        if is_mojibake(probe) or is_legacy_mojibake(probe):
            fixed = repair_mojibake(text) if self.fix else None
            if fixed is not None:
                issues.setdefault("mojibake_fixed", []).append(f"{what} {snippet(text)} -> {snippet(fixed)}")
                return normalize(fixed)
            issues.setdefault("mojibake", []).append(f"{what} {snippet(text)}")
        elif "\ufffd" in probe:
            issues.setdefault("replacement_char", []).append(what)
        return text

    def _language(self, value: Any, row: int) -> str | None:
        if _is_missing(value) or (isinstance(value, str) and value.strip().lower() == "und"):
            return None
        if isinstance(value, str):
            try:
                return parse_code(value)
            except UserError:
                pass
        self.warn(row, "bad_language", f"{self.fields.language!r} is {_kind(value)}, not a language code we know; "
                  "the language will be identified from the prompt")
        return None

    def _task(self, value: Any) -> str:
        return normalize(value.strip()) if isinstance(value, str) and value.strip() else self.task

    def _extras(self, raw: dict, record: dict, issues: dict[str, list[str]]) -> None:
        """Every other column, untouched, except that a name taken by a standard field gets "source_"."""
        for key, value in raw.items():
            if key in self.consumed:
                continue
            value, scrubbed = _scrub(value)
            if scrubbed:
                issues.setdefault("surrogate", []).append(repr(key))
            name = f"source_{key}" if key in STANDARD_FIELDS else key
            if name != key and key not in self.renamed:
                self.renamed.add(key)
                self.warn(None, "renamed_column", f"column {key!r} is a standard field name; kept as {name!r}")
            record[name] = value

    def _report(self, row: int, issues: dict[str, list[str]]) -> None:
        messages = {
            "surrogate": "lone surrogates (invalid UTF-16 escapes) replaced by U+FFFD in {}",
            "mojibake": "looks decoded with the wrong codec: {}; kept as is (--fix-mojibake repairs what can be undone)",
            "mojibake_fixed": "was decoded with the wrong codec and is repaired: {}",
            "replacement_char": "U+FFFD in {}: some characters were lost before this file was written",
        }
        for kind, where in issues.items():
            self.warn(row, kind, messages[kind].format(", ".join(dict.fromkeys(where))))


def _datasets_object(source: Any) -> bool:
    datasets = sys.modules.get("datasets")  # a datasets object implies the module is loaded
    kinds = ("Dataset", "IterableDataset", "DatasetDict", "IterableDatasetDict")
    return datasets is not None and isinstance(source, tuple(getattr(datasets, k) for k in kinds))


def _table(source: Any, encoding: str | None, split: str | None, name: str | None, log: ProblemLog) -> Table:
    if _datasets_object(source):
        if type(source).__name__.endswith("Dict"):
            source = pick_split(source, split, name or "dataset")
        label = name or getattr(getattr(source, "info", None), "dataset_name", None) or "dataset"
        return dataset_table(source, label, label, "dataset")
    if not isinstance(source, (str, Path)):
        raise UserError(f"cannot read a {type(source).__name__}: pass a file path, a folder, a hub id or a datasets.Dataset")
    table = source_table(source, encoding=encoding, split=split, log=log)
    return table if name is None else Table(table.rows, table.format, table.label, name, table.decoded, table.columns)


def _check_fields(fields: Fields) -> None:
    named = list(vars(fields).items())
    for i, (field, column) in enumerate(named):
        for other, same in named[i + 1:]:
            if column == same:
                raise UserError(f"column {column!r} is named for both {field} and {other}; give each field its own column")


def _visible(name: str) -> str:
    """A column name with its invisible characters (zero-width, bidi, controls, line breaks) escaped."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in name)


def _check_columns(table: Table, fields: Fields) -> None:
    """A table whose columns lack the prompt field is unusable as a whole: say so once, up front."""
    if table.columns is None or fields.prompt in table.columns:
        return
    close = difflib.get_close_matches(fields.prompt, table.columns, n=1, cutoff=0.5)
    hint = ""
    if close and _visible(close[0]) != close[0]:
        hint = f"the column {_visible(close[0])} holds invisible characters (escaped here): remove them, or "
    elif close:
        hint = f"did you mean --prompt-field {close[0]}? "
    columns = ", ".join(map(_visible, table.columns)) or "none"
    raise UserError(f"{table.label}: no column {fields.prompt!r} (columns: {columns}); {hint}name the prompt column with --prompt-field")


def _encoding_warnings(table: Table, encoding: str | None, log: ProblemLog) -> None:
    decoded = table.decoded
    if encoding is not None and decoded is None:
        log.add(table.label, None, "encoding_ignored",
                f"--encoding {encoding} does not apply: {table.format} stores text already decoded", dropped=False)
    if decoded is not None and decoded.method == "detected" and decoded.margin < UNCERTAIN_MARGIN:
        log.add(table.label, None, "encoding_uncertain",
                f"read as {decoded.encoding}, but {decoded.runner_up} is nearly as likely; "
                f"if rows look garbled, pass --encoding {decoded.runner_up}", dropped=False)


def read_records(
    source: Any,
    *,
    encoding: str | None = None,
    prompt_field: str = "prompt",
    language_field: str = "language",
    reference_field: str = "reference",
    answers_field: str = "answers",
    task_field: str = "task",
    task: str | None = None,
    split: str | None = None,
    name: str | None = None,
    strict: bool = False,
    fix_mojibake: bool = False,
) -> tuple[list[dict], ProblemLog, ReadInfo]:
    """Read `source` (a path, folder, hub id or datasets.Dataset) into records.

    `task` is the task of rows without a `task_field` value (default: the source's file stem);
    `name` replaces the file name in record ids; `split` picks a split of a DatasetDict or hub id.
    `strict` raises DataError at the first dropped row. Returns (records, problems, info), and
    info.rows == len(records) + log.dropped.
    """
    log = ProblemLog(strict=strict)
    fields = Fields(prompt_field, reference_field, answers_field, language_field, task_field)
    _check_fields(fields)
    table = _table(source, encoding, split, name, log)
    _check_columns(table, fields)
    _encoding_warnings(table, encoding, log)
    decoded = table.decoded
    default_task = task or Path(table.name).stem
    builder = _RecordBuilder(table, fields, default_task, log, fix_mojibake)
    columns: dict[str, None] = dict.fromkeys(table.columns or ())
    records = []
    for row, raw in table.rows:
        columns.update(dict.fromkeys(raw))
        record = builder.build(row, raw)
        if record is not None:
            records.append(record)
    info = ReadInfo(
        source=table.label,
        format=table.format,
        encoding=decoded.encoding if decoded else None,
        encoding_method=decoded.method if decoded else None,
        runner_up=decoded.runner_up if decoded else None,
        margin=decoded.margin if decoded and decoded.method == "detected" else None,
        rows=len(records) + log.dropped,
        columns=tuple(columns),
    )
    return records, log, info

