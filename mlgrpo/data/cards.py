"""Data cards: one markdown page per built-in suite, written from what the suites report.

A card says where the data comes from (packages, versions, licenses), how items and references are
made, how many items each language has in each split, and the known problems, with the counts
measured while building. Cards are generated, never edited: a test regenerates them and compares
them with the committed data_cards/, so a package upgrade that changes the data shows up as a
stale card. Knows nothing about models, trainers or MLflow.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

from mlgrpo.data.suites import available_suites, item_split, language_items, load_suite
from mlgrpo.data.suites.base import SuiteSpec
from mlgrpo.data.suites.loader import DEFAULT_EVAL_SHARE, language_name
from mlgrpo.text import dominant_script

EXAMPLE_LANGUAGES = ("de", "ar", "ja")  # one Latin, one right-to-left, one CJK: every suite has them
TOP_PAIRS = 8
SCRIPT_SAMPLE = 100
SHARED_COLUMN = "reference also another language's"


def _table(headers: list[str], rows: list[list]) -> str:
    def line(cells: list) -> str:  # a "|" (UI strings) or a line break (gsm's prompts) would split the row
        return "| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", "<br>") for cell in cells) + " |"

    return "\n".join([line(headers), "|" + "---|" * len(headers), *map(line, rows)])


def _script(name: str, language: str) -> str:
    """The script most of the first SCRIPT_SAMPLE references are written in ("Latin", "Han", ...); for
    references without letters (gsm's numbers), the script of the item's text."""
    items = language_items(name, language).items[:SCRIPT_SAMPLE]
    scripts = Counter(dominant_script(item.answers[0])[0] or dominant_script(item.text)[0] for item in items)
    return scripts.most_common(1)[0][0] or "none"


def shared_references(name: str) -> tuple[Counter, Counter]:
    """How often an item has the same reference in two languages.

    Returns (pairs, per_language): (language, language) -> shared items, and language -> how many
    of its items have a reference that another language also has for that item.
    """
    by_key: dict[str, dict[str, list[str]]] = {}  # item key -> reference -> languages
    for language in available_suites()[name].languages:
        for item in language_items(name, language).items:
            by_key.setdefault(item.key, {}).setdefault(item.answers[0], []).append(language)
    pairs: Counter = Counter()
    per_language: Counter = Counter()
    for references in by_key.values():
        for languages in references.values():
            if len(languages) > 1:
                pairs.update(itertools.combinations(languages, 2))
                per_language.update(languages)
    return pairs, per_language


def _languages_section(spec: SuiteSpec, shared: Counter) -> str:
    note_keys = list(dict.fromkeys(k for lang in spec.languages for k in language_items(spec.name, lang).notes))
    rows, totals = [], Counter(items=0, train=0, eval=0)
    for language in spec.languages:
        built = language_items(spec.name, language)
        splits = Counter(item_split(spec.name, item.key, DEFAULT_EVAL_SHARE) for item in built.items)
        counts = [len(built.items), splits["train"], splits["eval"]]
        totals.update(dict(zip(("items", "train", "eval"), counts)))
        notes = [built.notes.get(key, "") for key in note_keys]
        row = [f"`{language}`", language_name(language), _script(spec.name, language), *counts, *notes]
        rows.append([*row, shared[language]])
    blanks = [""] * (len(note_keys) + 1)
    rows.append(["**all**", f"{len(spec.languages)} languages", "", *totals.values(), *blanks])
    headers = ["code", "language", "script", "items", "train", "eval", *note_keys, SHARED_COLUMN]
    return (
        f"## Languages\n\nCounts at the default eval_share {DEFAULT_EVAL_SHARE}; train and eval never share "
        "an item. Further columns are counted while building.\n\n" + _table(headers, rows)
    )


def _prompts_section(spec: SuiteSpec) -> str:
    rows, record = [], None
    for language in EXAMPLE_LANGUAGES:
        tag, instruct = (load_suite(spec.name, languages=[language], prompt_style=s)[0] for s in ("tag", "instruct"))
        record = record or tag
        rows.append([f"`{language}`", f"`{tag['prompt']}`", instruct["prompt"], tag["reference"]])
    extra = ", `solution`" if "solution" in record else ""
    return (
        "## Splits and prompts\n\n"
        "- An item is in `eval` when the SHA-256 of `<suite>/<key>`, read as a fraction of 2^64, is below "
        "`eval_share`, else in `train`: the same split in every language, run and seed, and a larger "
        "eval_share only moves items from train to eval.\n"
        "- `per_language={...}` keeps that many items of the split per language, ranked by a hash of "
        "`<seed>/<key>`: nested (the 20 kept are among the 40 kept) and the same items in every language.\n"
        "- `prompt_style=\"tag\"` (default, for tiny models) and `\"instruct\"` (for chat models); first "
        "train item below. `\"fewshot\"` (for base models) shows three short train items without placeholders, "
        "the same in every run, and then the item in the same form.\n\n"
        + _table(["language", "tag", "instruct", "reference"], rows)
        + f"\n\nA record (mlgrpo.data.records, plus `item`, `source`, `split`{extra}):\n\n```json\n"
        + json.dumps(record, ensure_ascii=False)
        + "\n```"
    )


def _problems_section(spec: SuiteSpec, pairs: Counter) -> str:
    bullets = [f"- {problem}" for problem in spec.known_problems]
    if pairs:
        ranked = sorted(pairs.items(), key=lambda pair_count: (-pair_count[1], pair_count[0]))
        top = ", ".join(f"{a}/{b} {n}" for (a, b), n in ranked[:TOP_PAIRS])
        bullets.append(
            "- Same reference for the same item in two languages (the answer alone does not identify the "
            f"language), most shared pairs: {top}."
        )
    else:
        bullets.append("- No item has the same reference in two languages.")
    return "## Known problems\n\n" + "\n".join(bullets)


def render_card(name: str) -> str:
    """The markdown data card of suite `name` (builds the suite in all its languages)."""
    spec = available_suites()[name]
    pairs, shared = shared_references(name)
    sources = _table(
        ["package", "version", "license", "used for"],
        [[s.package, s.version, s.license, s.role] for s in spec.sources],
    )
    sections = [
        f"# Data card: `{spec.name}`\n\n{spec.description}\n\n"
        f"Generated by `mlgrpo suites cards --out data_cards/` from the installed packages; do not edit.\n"
        f"Load with `mlgrpo.data.suites.load_suite({spec.name!r}, ...)`.",
        "## Sources and licenses\n\n" + sources,
        "## How items and references are made\n\n" + spec.method,
        _languages_section(spec, shared),
        _prompts_section(spec),
        _problems_section(spec, pairs),
    ]
    return "\n\n".join(sections) + "\n"


def card_path(out_dir: str | Path, name: str) -> Path:
    return Path(out_dir) / f"{name}.md"


def write_cards(out_dir: str | Path) -> list[Path]:
    """Write one card per registered suite into `out_dir` (created if missing); returns the paths."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    paths = []
    for name in available_suites():
        path = card_path(out_dir, name)
        path.write_text(render_card(name), encoding="utf-8")
        paths.append(path)
    return paths
