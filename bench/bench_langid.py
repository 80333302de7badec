"""Benchmark: accuracy per language and milliseconds per text of each language-ID backend.

Real short texts in 24 languages from package data (bench/langid_texts.py), candidates = those 24
languages, every backend through the public `LanguageIdentifier` (screening included). Accuracy is
the best guess (min_confidence=0; "und" counts as wrong); the default backend is also shown at its
calibrated threshold. Backends are timed in turns over the same chunks of texts, so that load from
other processes falls on all of them alike; model loading is timed apart, once per language.

A text can be attested verbatim in the data the sources ship for several candidate languages (en
"jan" is also Django's Indonesian "Jan"): it has no single right answer. Each text's `owners` are the
candidates whose source data holds it (NFC, casefolded); accuracy is reported both strictly (every
text, right only in its source language) and on the unambiguous texts (one owner; the others
dropped and counted). The per-language floor goal is judged on the unambiguous texts.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_langid [--per-source 75] [--seed 0] [--repeats 3]
    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_langid --tuning --no-write   # the tuning sample
"""

from __future__ import annotations

import argparse
import gettext
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping

from bench._report import markdown_table, write_section
from bench.langid_texts import _LOCALE, LANGUAGES, BenchText, _django_catalogues, build, clean
from mlgrpo.langid import DEFAULT_MIN_CONFIDENCE, LanguageIdentifier

BACKEND_NAMES = ("script", "langdetect", "lingua", "fasttext", "default")
CHUNKS = 20
THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
GOAL_SPEEDUP, GOAL_MIN_ACCURACY = 20.0, 0.85


# babel's tables of names and calendar words: the sample draws on the first five (wide months and
# days only); attestation reads all of them, in every width and context.
CLDR_TABLES = (
    "territories", "languages", "currency_names", "months", "days", "currency_names_plural", "scripts",
    "variants", "quarters", "eras", "day_periods", "time_zones", "meta_zones", "unit_display_names",
    "date_fields", "measurement_systems",
)


def attestation_key(text: str) -> str:
    """What "the same string" means for attestation: placeholders and tags out, NFC, casefolded."""
    return clean(text).casefold()


def _strings(value) -> Iterable[str]:
    """Every string in a (nested) babel table."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def attested(language: str) -> set[str]:
    """Attestation keys of every string the benchmark's two sources ship for `language`: all of
    babel's CLDR_TABLES for its locale, and every msgstr of its Django catalogues (untranslated ones
    included); for English, every msgid of every Django catalogue. Wider than the pools the sample
    is drawn from, so that a text also written (say) as another language's abbreviated month name,
    time-zone city or untranslated UI string is found."""
    from babel import Locale

    data = Locale.parse(_LOCALE.get(language, language))._data
    keys = {attestation_key(s) for table in CLDR_TABLES if table in data for s in _strings(data[table])}
    if language == "en":
        import django
        from pathlib import Path

        catalogues = sorted(Path(django.__file__).parent.glob("**/locale/*/LC_MESSAGES/*.mo"))
    else:
        catalogues = _django_catalogues(_LOCALE.get(language, language))
    for path in catalogues:
        with path.open("rb") as handle:
            # GNUTranslations has no public way to list its entries; _catalog maps msgid -> msgstr.
            catalogue = gettext.GNUTranslations(handle)._catalog
        for msgid, msgstr in catalogue.items():
            msgid = (msgid[0] if isinstance(msgid, tuple) else msgid).split("\x04")[-1]
            if msgid:  # the "" entry is the catalogue's header
                keys.add(attestation_key(msgid if language == "en" else msgstr))
    keys.discard("")
    return keys


def owners(texts: list[BenchText], attested_by_language: Mapping[str, set[str]]) -> dict[BenchText, frozenset[str]]:
    """Each text's owners: the languages whose attested strings hold it, its own language always.

    >>> text = BenchText("id", "cldr", "Jan")
    >>> sorted(owners([text], {"id": {"jan"}, "en": {"jan", "june"}, "de": {"januar"}})[text])
    ['en', 'id']
    """
    found = {}
    for text in texts:
        key = attestation_key(text.text)
        found[text] = frozenset({text.language} | {lang for lang, keys in attested_by_language.items() if key in keys})
    return found


def run_backends(texts: list[BenchText], repeats: int) -> tuple[dict, dict, dict, dict]:
    """Guesses per backend (in text order), CPU and wall seconds per backend (best of `repeats`,
    each with an empty cache), and model-loading seconds."""
    identifiers = {name: LanguageIdentifier(LANGUAGES, backend=name, min_confidence=0.0) for name in BACKEND_NAMES}
    first_of_language = {t.language: t.text for t in texts}
    load = {}
    for name, identifier in identifiers.items():
        start = time.perf_counter()
        for text in first_of_language.values():
            identifier.identify(text + " ")  # another string than the timed one: no cache hit
        load[name] = time.perf_counter() - start
    size = -(-len(texts) // CHUNKS)
    chunks = [[t.text for t in texts[i : i + size]] for i in range(0, len(texts), size)]
    cpu = {name: float("inf") for name in BACKEND_NAMES}
    wall = dict(cpu)
    for _ in range(repeats):
        guesses: dict[str, list] = defaultdict(list)
        spent_cpu: dict[str, float] = defaultdict(float)
        spent_wall: dict[str, float] = defaultdict(float)
        for name, identifier in identifiers.items():
            identifier.clear_cache()
        for chunk in chunks:
            for name, identifier in identifiers.items():
                start_cpu, start_wall = time.process_time(), time.perf_counter()
                guesses[name] += identifier.identify_many(chunk)
                spent_cpu[name] += time.process_time() - start_cpu
                spent_wall[name] += time.perf_counter() - start_wall
        cpu = {name: min(cpu[name], spent_cpu[name]) for name in BACKEND_NAMES}
        wall = {name: min(wall[name], spent_wall[name]) for name in BACKEND_NAMES}
    return dict(guesses), cpu, wall, load


def accuracy(texts: list[BenchText], guesses: list, keep=lambda t: True) -> float:
    pairs = [(t, g) for t, g in zip(texts, guesses) if keep(t)]
    return sum(g.language == t.language for t, g in pairs) / len(pairs) if pairs else float("nan")


def owned_accuracy(texts: list[BenchText], guesses: list, owner: Mapping, keep=lambda t: True) -> float:
    """Accuracy where a guess of any of the text's owners counts as right."""
    pairs = [(t, g) for t, g in zip(texts, guesses) if keep(t)]
    return sum(g.language in owner[t] for t, g in pairs) / len(pairs) if pairs else float("nan")


def ceiling(texts: list[BenchText], guesses: dict, keep=lambda t: True) -> float:
    """Share of texts where fastText's or lingua's best guess is right: no rule that picks one of
    their two answers does better."""
    pairs = [(t, f, g) for t, f, g in zip(texts, guesses["fasttext"], guesses["lingua"]) if keep(t)]
    return sum(t.language in (f.language, g.language) for t, f, g in pairs) / len(pairs) if pairs else float("nan")


def calibration_rows(texts: list[BenchText], guesses: list) -> list[list]:
    rows = []
    for threshold in THRESHOLDS:
        kept = [(t, g) for t, g in zip(texts, guesses) if g.language != "und" and g.confidence >= threshold]
        right = sum(g.language == t.language for t, g in kept)
        rows.append([threshold, len(kept) / len(texts), right / max(1, len(kept)), right / len(texts)])
    return rows


def accuracy_rows(texts, guesses, cpu, wall, load) -> list[list]:
    """Strict, per language: every backend, then the default on names and on UI strings; then summaries."""
    n = len(texts)

    def row(label, count, keep):
        by_source = [accuracy(texts, guesses["default"], lambda t, s=s: keep(t) and t.source == s) for s in ("cldr", "ui")]
        return [label, count] + [accuracy(texts, guesses[b], keep) for b in BACKEND_NAMES] + by_source

    rows = [row(lang, sum(t.language == lang for t in texts), lambda t, lang=lang: t.language == lang) for lang in LANGUAGES]
    worst = ["worst language", ""] + [min(r[i] for r in rows) for i in range(2, len(rows[0]))]
    rows += [row("all", n, lambda t: True), worst]
    blank = ["", ""]
    rows += [
        ["CPU ms / text", ""] + [1000 * cpu[b] / n for b in BACKEND_NAMES] + blank,
        ["wall ms / text", ""] + [1000 * wall[b] / n for b in BACKEND_NAMES] + blank,
        ["x faster than langdetect (CPU)", ""] + [cpu["langdetect"] / cpu[b] for b in BACKEND_NAMES] + blank,
        ["model load, s (24 languages)", ""] + [load[b] for b in BACKEND_NAMES] + blank,
    ]
    return rows


UNAMBIGUOUS_HEADERS = [
    "language", "unambiguous texts", "ambiguous (dropped)", *BACKEND_NAMES,
    "default, strict (all texts)", "default, any owner right (all texts)", "fastText or lingua right",
]


def unambiguous_rows(texts, guesses, owner) -> list[list]:
    """Per language, on the texts with one owner: every backend, and the fastText-or-lingua ceiling;
    beside them, the default on all the language's texts, strictly and with any owner counted right."""

    def clear(t) -> bool:
        return len(owner[t]) == 1

    def row(label, of):
        kept = lambda t: of(t) and clear(t)  # noqa: E731
        return (
            [label, sum(map(kept, texts)), sum(of(t) and not clear(t) for t in texts)]
            + [accuracy(texts, guesses[b], kept) for b in BACKEND_NAMES]
            + [accuracy(texts, guesses["default"], of), owned_accuracy(texts, guesses["default"], owner, of)]
            + [ceiling(texts, guesses, kept)]
        )

    rows = [row(lang, lambda t, lang=lang: t.language == lang) for lang in LANGUAGES]
    worst = ["worst language", "", ""] + [min(r[i] for r in rows) for i in range(3, len(rows[0]))]
    return rows + [row("all", lambda t: True), worst]


def _best_single(texts, guesses, keep) -> tuple[str, float]:
    name = max((b for b in BACKEND_NAMES if b != "default"), key=lambda b: accuracy(texts, guesses[b], keep))
    return name, accuracy(texts, guesses[name], keep)


def _low(texts, guesses, keep) -> dict[str, float]:
    """The default's accuracy on the kept texts of each language below the floor, worst first."""
    per_language = {
        lang: accuracy(texts, guesses["default"], lambda t, lang=lang: t.language == lang and keep(t)) for lang in LANGUAGES
    }
    return {lang: acc for lang, acc in sorted(per_language.items(), key=lambda kv: kv[1]) if acc < GOAL_MIN_ACCURACY}


def _below(texts, guesses, keep) -> list[str]:
    return [f"{lang} {acc:.3f}" for lang, acc in _low(texts, guesses, keep).items()]


def goal_lines(texts, guesses, cpu, owner) -> list[str]:
    every = lambda t: True  # noqa: E731
    clear = lambda t: len(owner[t]) == 1  # noqa: E731
    lines = []
    for label, keep in (("unambiguous texts", clear), ("strict, all texts", every)):
        default = accuracy(texts, guesses["default"], keep)
        best_name, best = _best_single(texts, guesses, keep)
        lines.append(
            f"- default vs the best single backend ({best_name}), {label}: {default:.4f} vs {best:.4f} "
            f"({'met' if default >= best else 'MISSED by ' + format(best - default, '.4f')})."
        )
    speedup = cpu["langdetect"] / cpu["default"]
    lines.append(
        f"- default speed: {speedup:.1f}x langdetect in CPU time (goal {GOAL_SPEEDUP:.0f}x: "
        f"{'met' if speedup >= GOAL_SPEEDUP else 'MISSED by a factor ' + format(GOAL_SPEEDUP / speedup, '.2f')})."
    )
    below = _below(texts, guesses, clear)
    strict = _below(texts, guesses, every)
    lines.append(
        f"- no language below {GOAL_MIN_ACCURACY}, judged on the unambiguous texts: "
        + ("met." if not below else f"MISSED for {len(below)} of {len(LANGUAGES)}: {', '.join(below)}.")
        + f" (Strictly, on all texts: {len(strict)} below{': ' + ', '.join(strict) if strict else ''}.)"
    )
    return lines


def why_lines(texts, guesses, owner, cpu) -> str:
    def clear(t) -> bool:
        return len(owner[t]) == 1

    def below(source: str) -> str:
        low = _below(texts, guesses, lambda t: clear(t) and t.source == source)
        return f"{len(low)} ({', '.join(low)})" if low else "none"

    ambiguous = [t for t in texts if not clear(t)]
    errors = [t for t, g in zip(texts, guesses["default"]) if g.language != t.language]
    examples = ", ".join(
        f'"{t.text}" ({t.language}; also {"/".join(sorted(owner[t] - {t.language}))})' for t in ambiguous[:: max(1, len(ambiguous) // 5)][:5]
    )
    tops = {lang: ceiling(texts, guesses, lambda t, lang=lang: t.language == lang and clear(t)) for lang in LANGUAGES}
    low = _low(texts, guesses, clear)
    capped = [f"{lang} {top:.2f}" for lang, top in tops.items() if lang in low and top < GOAL_MIN_ACCURACY]
    roomy = [f"{lang} {top:.2f}" for lang, top in tops.items() if lang in low and top >= GOAL_MIN_ACCURACY]
    return (
        f"Why the misses. (1) Not ambiguity: {len(ambiguous)} of {len(texts)} texts are attested in another "
        f"candidate's source data (such as {examples}), and they hold {sum(not clear(t) for t in errors)} of the "
        f"default's {len(errors)} strict errors. They are few because the pools already leave out texts spelled "
        "alike in two languages' pools ('shared' above): what remains is attested only in data the pools do not "
        "draw on (abbreviated month names, untranslated UI strings, time-zone cities). "
        "(2) Names: transliterated proper names carry almost no language signal "
        '("Rubel Soviet" is Indonesian, "Kiromania" Swahili, "Slovenian Tolar" English), and every '
        f"backend does far better on UI strings. Languages below {GOAL_MIN_ACCURACY} with the default on "
        f"unambiguous names: {below('cldr')}; on unambiguous UI strings: {below('ui')}. "
        "(3) Both models are wrong together on most of them: a guess right whenever fastText's or lingua's "
        f"best guess is right (last column) stays below {GOAL_MIN_ACCURACY} for "
        f"{', '.join(capped) if capped else 'no language'}, so no rule that picks one of the two answers "
        "(weights, thresholds, ties) reaches the floor there. Where the ceiling is higher "
        f"({', '.join(roomy) if roomy else 'none'}) the two "
        "models disagree, and nothing tried on the tuning sample picked the right one more often without "
        "losing as much elsewhere (fastText's weight 0-0.7 and threshold 0.6-1.0, another threshold for "
        "one-word texts, fastText's Malay mass counted as Indonesian, lingua alone where fastText knows no "
        "n-gram of the text): none raised the worst Latin-script language. Per-language biases tuned on "
        "the tuning sample raised its worst language to 0.75 but left "
        "this sample's at 0.63-0.66 (overfitting); excluding texts spelled alike up to diacritics and "
        "untranslated UI strings changed accuracy by under a point. Where lingua compares few languages "
        "(ar/fa/ur, ru/uk, zh/ja) the default now asks it unless fastText is practically certain (0.999): "
        "chosen on the tuning sample, where it moved Urdu from 0.68 to 0.85 (and Persian from 0.96 to 0.89). (4) Speed: the default sends "
        "texts fastText is unsure of to lingua: below 0.8 for the 11 Latin-script candidates (about 0.16 ms "
        "a call), below 0.999 where lingua compares at most 3 (about 0.05 ms): 31% of the tuning sample's texts "
        "(21% before the second threshold, which costs about 5% more time; skipping ftfy's mojibake check "
        "for ASCII texts and settling the mixed-language check from its largest parts first won most of "
        "that back). The rest is fastText (about 0.015 ms a text) and Python around the native calls "
        f"(screening, script shares, the identifier: the script backend's {1000 * cpu['script'] / len(texts):.3f} "
        "ms a text). Batching fastText does not help: fasttext-predict 0.9.2.4's list predict returns labels "
        "without probabilities, and measured no faster per text."
    )


def report(texts, guesses, cpu, wall, load, excluded, owner, args) -> str:
    headers = ["language", "texts", *BACKEND_NAMES, "default: names", "default: UI"]
    counts = "; ".join(
        f"{reason} {sum(by_lang.values())} ({', '.join(f'{k} {v}' for k, v in by_lang.most_common(5))}, ...)"
        for reason, by_lang in excluded.items()
    )
    sample = (
        f"seed {args.seed}, drawn from what seed 0's sample left (the tuning sample)"
        if args.tuning
        else f"seed {args.seed}; the default's constants were tuned on seed 1 drawn from what this sample left, "
        "so no reported text was seen in tuning"
    )
    intro = (
        f"{len(texts)} texts: {args.per_source} per language and source ({sample}), candidates = the 24 "
        "languages. Sources: CLDR names (countries, languages, currencies, months, days) from babel, and "
        "Django's UI strings. Excluded from the pools before sampling, alike for every backend: texts "
        "spelled the same, up to case and diacritics, in two or more languages ('shared'; 'shared only up "
        "to diacritics' counts those among them that differ in case-insensitive spelling, such as pt "
        "'Gâmbia' and en 'Gambia'), and Django translations equal to their English msgid up to case and "
        f"diacritics ('untranslated'): {counts}. Accuracy is the best guess "
        "(min_confidence=0, 'und' counts as wrong). Timings are from a shared 2-core machine with other "
        "engineers' jobs running: CPU time (process_time) is less disturbed by them than wall time, so "
        f"ratios use it; both are the best of {args.repeats} passes with empty caches, the backends "
        "taking turns over the same chunks of texts in one process."
    )
    ambiguity = (
        "Ambiguous texts. A text's owners are the candidate languages whose source data holds the same "
        "string (NFC, casefolded): all of babel's CLDR names and calendar words for the locale (every table, "
        "width and context, not only those the pools draw on) and every msgstr of its Django catalogues, "
        "untranslated ones included (for English, every msgid). A text with two or more owners (en \"jan\" "
        "is also Indonesian Django's \"Jan\") has no single right answer: the table below drops them "
        "(counted per language) and the floor goal is judged on what is left. The strict table above "
        "counts every text, right only in its source language; 'any owner right' counts a guess of any "
        "owner as right."
    )
    return "\n\n".join(
        [
            intro,
            "Strict: every text, right only in its source language.",
            markdown_table(headers, accuracy_rows(texts, guesses, cpu, wall, load)),
            ambiguity,
            markdown_table(UNAMBIGUOUS_HEADERS, unambiguous_rows(texts, guesses, owner)),
            "Goals:\n" + "\n".join(goal_lines(texts, guesses, cpu, owner)),
            why_lines(texts, guesses, owner, cpu),
            f"Default backend at min_confidence thresholds (the shipped default is "
            f"{DEFAULT_MIN_CONFIDENCE}), all texts, strict; coverage = share of texts answered:",
            markdown_table(["threshold", "coverage", "precision", "accuracy"], calibration_rows(texts, guesses["default"])),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-source", type=int, default=75, help="texts per language and source")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes; the fastest counts")
    parser.add_argument("--no-write", action="store_true", help="print only; leave reports/ alone")
    parser.add_argument("--tuning", action="store_true", help="seed 1 by default, from what seed 0 leaves")
    args = parser.parse_args(argv)
    if args.tuning:
        if args.seed == 0:
            args.seed = 1
        if not args.no_write:
            parser.error("--tuning is for choosing constants: add --no-write (the report shows seed 0)")
    texts, excluded = build(args.per_source, args.seed, avoid_seed=0 if args.tuning else None)
    owner = owners(texts, {lang: attested(lang) for lang in LANGUAGES})
    guesses, cpu, wall, load = run_backends(texts, args.repeats)
    body = report(texts, guesses, cpu, wall, load, excluded, owner, args)
    print(body)
    if not args.no_write:
        command = "OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_langid"
        path = write_section("langid", "Language identification", body, command)
        print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
