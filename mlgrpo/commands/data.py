"""`mlgrpo data prepare` and `mlgrpo data inspect`: argument parsing and printing only.

The work is in mlgrpo.data.prepare and mlgrpo.data.inspect.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="INPUT",
                        help="a .jsonl/.json/.csv/.tsv/.parquet file, a saved datasets folder, a folder of "
                        "data files, or a Hugging Face Hub dataset id (org/name, or hf:name)")
    parser.add_argument("--encoding", metavar="E", help="the file's text encoding (default: detected)")
    parser.add_argument("--prompt-field", default="prompt", metavar="F", help="column with the prompt (default: prompt)")
    parser.add_argument("--language-field", default="language", metavar="F",
                        help="column with each row's language code, if any (default: language)")
    parser.add_argument("--reference-field", default="reference", metavar="F",
                        help="column with the reference answer; a list there means several accepted answers")
    parser.add_argument("--answers-field", default="answers", metavar="F", help="column with a list of accepted answers")
    parser.add_argument("--task", metavar="T", help="task name for rows without a 'task' column (default: file stem)")
    parser.add_argument("--split", metavar="S", help="split of a datasets folder or hub dataset (default: the only one, or train)")
    parser.add_argument("--candidates", metavar="CODES",
                        help="comma-separated ISO 639-1 codes language ID may answer (default: all it knows)")
    parser.add_argument("--strict", action="store_true", help="stop at the first row that would be dropped")
    parser.add_argument("--fix-mojibake", action="store_true",
                        help="repair text decoded with the wrong codec where that can be undone (reported per row)")


def _options(args: argparse.Namespace) -> dict:
    """Keyword arguments of prepare() and inspect_source() (read_records options and candidates)."""
    return {
        "encoding": args.encoding,
        "prompt_field": args.prompt_field,
        "language_field": args.language_field,
        "reference_field": args.reference_field,
        "answers_field": args.answers_field,
        "task": args.task,
        "split": args.split,
        "strict": args.strict,
        "fix_mojibake": args.fix_mojibake,
        "candidates": [c for c in args.candidates.split(",") if c.strip()] if args.candidates else None,
    }


def _prepare(args: argparse.Namespace) -> int:
    from mlgrpo.data.prepare import format_summary, prepare

    summary = prepare(args.input, args.out, problems=args.problems, **_options(args))
    print(format_summary(summary))
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from mlgrpo.data.inspect import inspect_source, render_card, render_text
    from mlgrpo.data.prepare import check_writable, write_lines_atomic

    if args.card:
        check_writable(Path(args.card), args.input)
    report = inspect_source(args.input, **_options(args))
    print(json.dumps(report, ensure_ascii=False) if args.json else render_text(report))
    if args.card:
        write_lines_atomic(Path(args.card), [render_card(report).rstrip("\n")])
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    data = subparsers.add_parser("data", help="prepare and inspect datasets",
                                 description="Read a dataset in any supported format and encoding.")
    commands = data.add_subparsers(dest="data_command", metavar="ACTION")
    commands.required = True

    prepare = commands.add_parser("prepare", help="write clean UTF-8 JSONL with a language on every row",
                                  description="Write clean UTF-8 JSONL with a language on every row; "
                                  "every row not written is counted and reported.")
    _add_input_options(prepare)
    prepare.add_argument("--out", required=True, metavar="OUT.jsonl", help="output file (written atomically)")
    prepare.add_argument("--problems", metavar="PROBLEMS.jsonl", help="write every problem found here, as JSONL")
    prepare.set_defaults(handler=_prepare)

    inspect = commands.add_parser("inspect", help="rows, encoding, languages, scripts, lengths and problems",
                                  description="Report what a dataset holds and every problem found in it.")
    _add_input_options(inspect)
    inspect.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    inspect.add_argument("--card", metavar="CARD.md", help="also write a markdown data card here")
    inspect.set_defaults(handler=_inspect)
