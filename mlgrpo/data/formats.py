"""File formats to rows: JSONL, JSON, CSV/TSV, Parquet, and `datasets` objects, folders and hub ids.

Every reader yields `(row, mapping)` pairs, row being 1-based (the line for JSONL/CSV/TSV, the
element for JSON arrays, the row for Parquet and datasets), and books each row it cannot turn into
a mapping (undecodable, empty, not JSON, not an object, wrong field count) in the ProblemLog, so
that rows yielded + rows dropped = rows in the input. Knows nothing about prompts, references or
languages: which field means what is mlgrpo.data.readers' business.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlgrpo.data.encoding import UNDECODABLE, Decoded, decode_bytes
from mlgrpo.data.records import ProblemLog
from mlgrpo.errors import DataError, UserError

Rows = Iterator[tuple[int, dict]]

EXTENSIONS = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".tsv": "tsv",
    ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
}
# "org/name": what a Hugging Face Hub dataset id looks like. A bare "name" is far more often a
# mistyped file than a hub id, so it is read as a hub id only with the "hf:" prefix.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_HUB_PREFIX = "hf:"
_SNIPPET = 60
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# What the csv module's strict-mode errors mean, said for people: a quote out of place is the usual cause.
_CSV_QUOTE_ERRORS = {
    "unexpected end of data": "a quoted field starts on this line and is never closed (a quote out of place?)",
    "expected after": "a quoted field that starts on this line has text after its closing quote "
                      "(a quote out of place?)",
}


@dataclass(frozen=True)
class Table:
    """Rows of one source, and what is known about how they were stored."""

    rows: Rows
    format: str  # "jsonl", "json", "csv", "tsv", "parquet", "dataset", "saved_dataset", "folder", "hub"
    label: str  # the source as the user named it: problems point here
    name: str  # short name for record ids: the file name, or the dataset's name
    decoded: Decoded | None = None  # None where the format fixes the encoding (Parquet, datasets)
    columns: tuple[str, ...] | None = None  # known up front for CSV, Parquet and datasets


def snippet(text: str) -> str:
    """A row's text as a person can read it in one line of an error message."""
    text = text.replace(UNDECODABLE, "\ufffd")
    return repr(text if len(text) <= _SNIPPET else text[:_SNIPPET] + "...")


def _undecodable(log: ProblemLog, label: str, row: int, text: str, decoded: Decoded) -> None:
    log.add(
        label, row, "undecodable",
        f"bytes that are not valid {decoded.encoding} ({snippet(text)}, \ufffd marks them); "
        "re-save the file in one encoding, or pass --encoding if the whole file is in another",
        dropped=True,
    )


def _lines(text: str) -> list[str]:
    # \r\n, \n and a lone \r (old Mac files, or a part of one pasted into another) each end a line, as in
    # Python's universal newlines; not splitlines(): U+2028 and \x1c are legal inside JSON strings.
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no row
    return lines


def jsonl_rows(text: str, decoded: Decoded, label: str, log: ProblemLog) -> Rows:
    for row, line in enumerate(_lines(text), 1):
        if UNDECODABLE in line:
            _undecodable(log, label, row, line, decoded)
        elif not line.strip():
            log.add(label, row, "empty", "blank line", dropped=True)
        else:
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                log.add(label, row, "bad_json", f"not valid JSON: {exc.msg} at column {exc.colno}: {snippet(line)}", dropped=True)
                continue
            if isinstance(value, dict):
                yield row, value
            else:
                log.add(label, row, "not_object", f"a JSON {type(value).__name__}, not an object: {snippet(line)}", dropped=True)


def _records_in(value: Any, label: str) -> list:
    """The list of rows in a parsed JSON document: the array itself, or the one array an object holds."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        arrays = [key for key, item in value.items() if isinstance(item, list)]
        if "data" in arrays:
            return value["data"]
        if len(arrays) == 1:
            return value[arrays[0]]
        keys = ", ".join(map(repr, list(value)[:8])) or "none"
        raise DataError(
            f"{label}: a JSON object with keys {keys}; expected an array of objects, or an object "
            'holding exactly one array of them (like {"data": [...]})'
        )
    raise DataError(f"{label}: the JSON document is a {type(value).__name__}; expected an array of objects")


def _holds_undecodable(value: Any) -> bool:
    if isinstance(value, str):
        return UNDECODABLE in value
    if isinstance(value, dict):
        return any(_holds_undecodable(k) or _holds_undecodable(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_undecodable(v) for v in value)
    return False


def json_rows(text: str, decoded: Decoded, label: str, log: ProblemLog) -> tuple[str, Rows]:
    """("json", rows), or ("jsonl", rows) for a .json file that holds JSON Lines (as datasets writes)."""
    if not text.strip():
        return "json", iter(())
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return "jsonl", jsonl_rows(text, decoded, label, log)
        raise DataError(f"{label}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None

    items = _records_in(value, label)  # a document without rows fails here, not on first iteration

    def rows() -> Rows:
        for row, item in enumerate(items, 1):
            if decoded.undecodable and _holds_undecodable(item):
                _undecodable(log, label, row, json.dumps(item, ensure_ascii=False), decoded)
            elif isinstance(item, dict):
                yield row, item
            else:
                log.add(label, row, "not_object", f"a JSON {type(item).__name__}, not an object", dropped=True)

    return "json", rows()


def _csv_problem(exc: csv.Error) -> str:
    return next((said for known, said in _CSV_QUOTE_ERRORS.items() if known in str(exc)), str(exc))


def delimited_rows(text: str, decoded: Decoded, label: str, log: ProblemLog, delimiter: str) -> tuple[tuple[str, ...], Rows]:
    """(header, rows) of CSV or TSV; a row is numbered by the line it starts on (the header is line 1).

    Quotes are read strictly: a quoted field left open, or closed with text after it, would otherwise
    swallow the lines after it into one field, and their rows would be lost without a word. Such a
    row is dropped and reading starts again on the next line, so that the rows after it are kept.
    """
    lines = _lines(text)
    if lines and UNDECODABLE in lines[0]:  # dropping it would make the first row the header
        raise DataError(f"{label}:1: the header has bytes that are not valid {decoded.encoding} ({snippet(lines[0])}, "
                        "\ufffd marks them); re-save the file in one encoding, or pass --encoding if it is in another")
    numbered = []
    for line_no, line in enumerate(lines, 1):
        if UNDECODABLE in line:
            _undecodable(log, label, line_no, line, decoded)
        else:
            numbered.append((line_no, line))
    # A long prompt is one field: Python's default limit (128 KiB) would reject it.
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    kind = "TSV" if delimiter == "\t" else "CSV"

    def reader_from(start: int):
        rest = (numbered[i][1] + "\n" for i in range(start, len(numbered)))
        return csv.reader(rest, delimiter=delimiter, strict=True)

    header_reader = reader_from(0)
    try:
        header = tuple(next(header_reader, ()))
    except csv.Error as exc:
        raise DataError(f"{label}:1: not valid {kind} in the header: {_csv_problem(exc)}") from None
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        raise DataError(f"{label}:1: the header names {', '.join(map(repr, duplicated))} "
                        "more than once; rename the columns")

    def rows() -> Rows:
        start = header_reader.line_num  # index in `numbered` of the line the next row starts on
        while start < len(numbered):
            reader, consumed = reader_from(start), 0
            try:
                for fields in reader:
                    row, consumed = numbered[start + consumed][0], reader.line_num
                    if not any(field.strip() for field in fields):
                        log.add(label, row, "empty", "a row with no values", dropped=True)
                    elif len(fields) != len(header):
                        log.add(label, row, "bad_csv", f"{len(fields)} fields where the header has {len(header)} "
                                "(a quote or delimiter out of place?)", dropped=True)
                    else:
                        yield row, dict(zip(header, fields))
                return
            except csv.Error as exc:
                log.add(label, numbered[start + consumed][0], "bad_csv", f"not valid {kind}: {_csv_problem(exc)}",
                        dropped=True)
                start += consumed + 1

    return header, rows()


def parquet_table(path: Path, label: str) -> Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{label}: not a readable Parquet file: {exc}") from None

    def rows() -> Rows:
        row = 0
        for batch in parquet.iter_batches():
            for item in batch.to_pylist():
                row += 1
                yield row, item

    return Table(rows(), "parquet", label, path.name, columns=tuple(parquet.schema_arrow.names))


def format_of(path: Path) -> str:
    fmt = EXTENSIONS.get(path.suffix.lower())
    if fmt is None:
        supported = ", ".join(sorted(EXTENSIONS))
        raise UserError(f"{path}: unknown format {path.suffix or '(no extension)'!r}; supported: {supported}, "
                        "a saved `datasets` folder, or a Hugging Face Hub dataset id")
    return fmt


def file_table(path: Path, label: str, encoding: str | None, log: ProblemLog) -> Table:
    """Rows of one file, its format told by the extension."""
    fmt = format_of(path)
    if fmt == "parquet":
        return parquet_table(path, label)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{label}: cannot read the file: {exc.strerror}") from None
    decoded = decode_bytes(data, encoding, source=label)
    if fmt == "jsonl":
        return Table(jsonl_rows(decoded.text, decoded, label, log), fmt, label, path.name, decoded)
    if fmt == "json":
        fmt, rows = json_rows(decoded.text, decoded, label, log)
        return Table(rows, fmt, label, path.name, decoded)
    header, rows = delimited_rows(decoded.text, decoded, label, log, "," if fmt == "csv" else "\t")
    return Table(rows, fmt, label, path.name, decoded, header or None)  # an empty file has no header


def dataset_table(dataset: Any, label: str, name: str, fmt: str) -> Table:
    """Rows of a datasets.Dataset (or IterableDataset): values are already text, no decoding."""
    columns = getattr(dataset, "column_names", None)
    rows = ((row, dict(item)) for row, item in enumerate(dataset, 1))
    return Table(rows, fmt, label, name, columns=tuple(columns) if columns else None)


def pick_split(dataset: Any, split: str | None, label: str) -> Any:
    """One split of a DatasetDict: the one named, or the only one."""
    splits = list(dataset)
    if split is None and len(splits) == 1:
        return dataset[splits[0]]
    if split in dataset:
        return dataset[split]
    wanted = "no split was named" if split is None else f"there is no split {split!r}"
    raise UserError(f"{label}: {wanted}; choose one of {', '.join(splits)} (--split)")


def _load_dataset(target: str, split: str | None, label: str):
    import datasets

    try:
        return datasets.load_dataset(target, split=split)
    except (OSError, ValueError, datasets.exceptions.DatasetsError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(
            f"{label}: could not load it with datasets.load_dataset ({first}). Offline, a hub dataset must "
            "already be cached (set HF_HUB_OFFLINE=1 to use the cache) or saved with save_to_disk and "
            "passed as a folder"
        ) from None


def source_table(source: str | Path, *, encoding: str | None, split: str | None, log: ProblemLog) -> Table:
    """Rows of a file, a saved datasets folder, a folder of data files, or a hub id ("hf:" forces one)."""
    label = str(source)
    if label.startswith(_HUB_PREFIX):
        hub_id = label[len(_HUB_PREFIX):]
        return dataset_table(_load_dataset(hub_id, split or "train", label), label, hub_id, "hub")
    path = Path(source)
    if path.is_file():
        return file_table(path, label, encoding, log)
    if path.is_dir():
        if (path / "dataset_dict.json").exists() or (path / "state.json").exists():
            import datasets

            try:
                loaded = datasets.load_from_disk(str(path))
            except (OSError, ValueError) as exc:
                raise DataError(f"{label}: a datasets folder that cannot be loaded: {exc}") from None
            dataset = pick_split(loaded, split, label) if isinstance(loaded, datasets.DatasetDict) else loaded
            return dataset_table(dataset, label, path.name, "saved_dataset")
        loaded = _load_dataset(str(path), split, label)
        return dataset_table(pick_split(loaded, split, label) if split is None else loaded, label, path.name, "folder")
    if path.exists():
        raise UserError(f"{label}: not a file or folder")
    if path.suffix.lower() in EXTENSIONS:
        raise UserError(f"{label}: no such file")
    if _HUB_ID.match(label) and not path.parent.is_dir():
        return dataset_table(_load_dataset(label, split or "train", label), label, label, "hub")
    raise UserError(f"{label}: no such file or folder (a Hugging Face Hub id is org/name, or hf:name)")
