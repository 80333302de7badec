"""`mlgrpo langid`: add `language` and `confidence` to every JSON object of a JSONL stream.

    mlgrpo langid prompts.jsonl --candidates de,fr,zh --field prompt > tagged.jsonl
    cat prompts.jsonl | mlgrpo langid --field prompt

Every line is checked before anything is written: a bad line (not UTF-8, not JSON, not an object,
no such field, a field that is not a string) stops the command with its line number, and stdout
stays empty. Blank lines are not rows and are skipped. Holds no language-ID logic of its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable

from mlgrpo.errors import DataError, UserError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "langid",
        help="identify the language of a text field in JSONL",
        description="Read JSONL (a file, or stdin when FILE is '-' or absent) and write it to stdout "
        "with `language` (ISO 639-1, or 'und') and `confidence` added to each object.",
    )
    parser.add_argument("file", nargs="?", default="-", metavar="FILE", help="JSONL file; '-' or nothing: stdin")
    parser.add_argument(
        "--candidates",
        metavar="CODES",
        help="comma-separated ISO 639-1 codes the texts may be in, e.g. de,fr,zh (default: all known)",
    )
    parser.add_argument("--field", default="text", help="the string field to identify (default: text)")
    from mlgrpo.langid import BACKENDS  # cheap: models load on first use, not on import

    parser.add_argument(
        "--backend",
        default="default",
        help="; ".join(f"{name}: {backend.summary}" for name, backend in BACKENDS.items()),
    )
    parser.add_argument(
        "--min-confidence",
        type=float,
        metavar="P",
        help="answer 'und' below this probability (default: the identifier's calibrated value)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from mlgrpo.langid import LanguageIdentifier
    from mlgrpo.langid.identifier import DEFAULT_MIN_CONFIDENCE

    candidates = None if args.candidates is None else [c for c in args.candidates.split(",") if c.strip()]
    min_confidence = DEFAULT_MIN_CONFIDENCE if args.min_confidence is None else args.min_confidence
    identifier = LanguageIdentifier(candidates, backend=args.backend, min_confidence=min_confidence)
    source = "<stdin>" if args.file == "-" else args.file
    rows = list(read_rows(_open_lines(args.file), source, args.field))
    guesses = identifier.identify_many([row[args.field] for row in rows])
    for row, guess in zip(rows, guesses):
        row["language"] = guess.language
        row["confidence"] = round(guess.confidence, 4)
    sys.stdout.write(_dumps_lines(rows))
    return 0


def _open_lines(path: str) -> list[bytes]:
    if path == "-":
        return sys.stdin.buffer.read().splitlines()
    try:
        with open(path, "rb") as handle:
            return handle.read().splitlines()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None


def read_rows(lines: Iterable[bytes], source: str, field: str) -> Iterable[dict]:
    """The JSON objects of `lines`, each checked to hold the string `field`; DataError otherwise."""
    for number, raw in enumerate(lines, start=1):
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark is not content
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{source}:{number}: not UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1}); "
                "convert the file to UTF-8"
            ) from None
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{source}:{number}: not JSON ({exc.msg} at column {exc.colno}); "
                "each line must be one JSON object"
            ) from None
        if not isinstance(row, dict):
            raise DataError(f"{source}:{number}: a JSON {type(row).__name__}, not an object; each line must be one JSON object")
        if field not in row:
            fields = ", ".join(map(repr, row)) or "none"
            raise DataError(f"{source}:{number}: no field {field!r} (fields: {fields}); choose one with --field")
        if not isinstance(row[field], str):
            raise DataError(
                f"{source}:{number}: field {field!r} is {json.dumps(row[field])[:40]}, not a string"
            )
        yield row


def _dumps_lines(rows: list[dict]) -> str:
    """The rows as JSONL; the encoding check is made once for all of them (once per row cost as much as dumping)."""
    text = "".join([json.dumps(row, ensure_ascii=False) + "\n" for row in rows])
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join([_dumps(row) + "\n" for row in rows])
    return text


def _dumps(row: dict) -> str:
    text = json.dumps(row, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a "\ud800" escape: write it escaped again
        text = json.dumps(row, ensure_ascii=True)
    return text
