"""`mlgrpo data inspect`: what a user's dataset holds, as text, as one JSON object, or as a data card.

The report is a plain dict built by pure functions from what readers and language ID found: rows,
format, encoding, languages with counts and shares, script mix, prompt lengths, every problem.
Knows nothing about models, trainers or MLflow; writes nothing but the card it is asked for.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from mlgrpo.data.language import assign_languages, identifier_for, language_counts
from mlgrpo.data.readers import ReadInfo, read_records
from mlgrpo.data.records import ProblemLog
from mlgrpo.text import script_counts

CARD_PROBLEMS = 50  # problems listed in a card; the JSON report has them all


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value with at least q% of the values at or below it.

    >>> percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)   # rank ceil(0.95 * 10) = 10
    10
    """
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def length_stats(texts: Sequence[str]) -> dict[str, float] | None:
    """min / median / mean / p95 / max of the texts' lengths in characters; None for no texts."""
    if not texts:
        return None
    lengths = sorted(len(text) for text in texts)
    return {
        "min": lengths[0],
        "median": statistics.median(lengths),
        "mean": round(statistics.fmean(lengths), 2),
        "p95": percentile(lengths, 95),
        "max": lengths[-1],
    }


def script_mix(texts: Sequence[str]) -> list[dict[str, Any]]:
    """Characters per script over all texts (digits, punctuation and spaces not counted), with shares."""
    counts: Counter = Counter()
    for text in texts:
        counts.update(script_counts(text))
    total = sum(counts.values())
    return [
        {"script": script, "chars": n, "share": round(n / total, 4)}
        for script, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def _kind_counts(log: ProblemLog, *, dropped: bool) -> dict[str, int]:
    return dict(Counter(p.kind for p in log.problems if p.dropped == dropped))


def build_report(records: list[dict], log: ProblemLog, info: ReadInfo, identified: int) -> dict[str, Any]:
    """The inspect report of records whose languages are filled in."""
    prompts = [record["prompt"] for record in records]
    usable = len(records)
    return {
        "source": info.source,
        "format": info.format,
        "encoding": {
            "name": info.encoding, "method": info.encoding_method, "runner_up": info.runner_up,
            "margin": None if info.margin is None or math.isinf(info.margin) else round(info.margin, 1),
            "description": info.describe_encoding(),
        },
        "rows": {"read": info.rows, "usable": usable, "dropped": log.dropped},
        "columns": list(info.columns),
        "languages": [
            {"language": code, "rows": n, "share": round(n / usable, 4)} for code, n in language_counts(records)
        ],
        "languages_identified": identified,
        "scripts": script_mix(prompts),
        "prompt_chars": length_stats(prompts),
        "dropped_by_kind": _kind_counts(log, dropped=True),
        "warnings_by_kind": _kind_counts(log, dropped=False),
        "problems": log.to_json(),
    }


def inspect_source(
    source: Any, *, candidates: Sequence[str] | None = None, backend: str = "default", **read_options: Any
) -> dict[str, Any]:
    """Read `source` (read_records options apply), identify missing languages, and report."""
    identifier = identifier_for(candidates, backend)
    records, log, info = read_records(source, **read_options)
    records, identified = assign_languages(records, identifier)
    return build_report(records, log, info, identified)


def _where(problem: dict) -> str:
    return f"{problem['source']}:{problem['row']}" if problem["row"] is not None else problem["source"]


def _problem_line(problem: dict) -> str:
    verdict = "dropped" if problem["dropped"] else "kept"
    return f"{_where(problem)}: {problem['kind']} ({verdict}): {problem['message']}"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


def render_text(report: dict[str, Any]) -> str:
    rows, stats = report["rows"], report["prompt_chars"]
    languages = ", ".join(f"{x['language']} {x['rows']} ({100 * x['share']:.1f}%)" for x in report["languages"])
    scripts = ", ".join(f"{x['script']} {100 * x['share']:.1f}%" for x in report["scripts"])
    lengths = " ".join(f"{k} {v}" for k, v in stats.items()) if stats else "no prompts"
    lines = [
        f"source    {report['source']} ({report['format']})",
        f"encoding  {report['encoding']['description']}",
        f"rows      {rows['read']} read, {rows['usable']} usable, {rows['dropped']} dropped",
        f"columns   {', '.join(report['columns']) or 'none'}",
        f"languages {languages or 'none'} ({report['languages_identified']} identified)",
        f"scripts   {scripts or 'none'}",
        f"prompt    chars: {lengths}",
        f"dropped   {_counts(report['dropped_by_kind'])}",
        f"warnings  {_counts(report['warnings_by_kind'])}",
        f"problems  {len(report['problems'])}",
    ]
    lines += [f"  {_problem_line(p)}" for p in report["problems"]]
    return "\n".join(lines)


def _table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows])


def render_card(report: dict[str, Any]) -> str:
    """A markdown data card: measured facts, then the sections only the dataset's owner can fill in."""
    rows, stats, problems = report["rows"], report["prompt_chars"], report["problems"]
    listed = "\n".join(f"- `{_where(p)}` {p['kind']} ({'dropped' if p['dropped'] else 'kept'}): {p['message']}"
                       for p in problems[:CARD_PROBLEMS]) or "None found."
    if len(problems) > CARD_PROBLEMS:
        listed += f"\n- ... and {len(problems) - CARD_PROBLEMS} more (`mlgrpo data inspect --json` lists all)."
    kinds = [[k, n, "dropped"] for k, n in report["dropped_by_kind"].items()]
    kinds += [[k, n, "kept, with a warning"] for k, n in report["warnings_by_kind"].items()]
    sections = [
        f"# Data card: `{report['source']}`\n\nMeasured by `mlgrpo data inspect`; the last section is yours to fill in.",
        "## Source\n\n" + "\n".join([
            f"- Source: `{report['source']}`",
            f"- Format: {report['format']}",
            f"- Encoding: {report['encoding']['description']}",
            f"- Rows: {rows['read']} read, {rows['usable']} usable, {rows['dropped']} dropped",
            f"- Columns: {', '.join(f'`{c}`' for c in report['columns']) or 'none'}",
        ]),
        "## Languages\n\n" + _table(["language", "rows", "share"], [
            [f"`{x['language']}`", x["rows"], f"{100 * x['share']:.1f}%"] for x in report["languages"]
        ]) + f"\n\n{report['languages_identified']} of {rows['usable']} languages were identified from the prompt "
        "(the others were given in the source); `und` means undetermined.",
        "## Scripts\n\n" + _table(["script", "characters", "share"], [
            [x["script"], x["chars"], f"{100 * x['share']:.1f}%"] for x in report["scripts"]
        ]),
        "## Prompt length (characters)\n\n" + (_table(list(stats), [list(stats.values())]) if stats else "No prompts."),
        "## Problems\n\n" + (_table(["kind", "rows", "outcome"], kinds) + "\n\n" if kinds else "") + listed,
        "## Fill in: license and provenance\n\n"
        "- License (and a link to its text):\n"
        "- Where the data comes from (authors, collection method, version or date):\n"
        "- Personal or sensitive data, and consent:\n"
        "- Intended use, and uses to avoid:\n"
        "- Known biases or gaps (languages, dialects, domains):",
    ]
    return "\n\n".join(sections) + "\n"
