"""Benchmark: accuracy per language and milliseconds per text of each language-ID backend.

Real short texts in 24 languages from package data (bench/langid_texts.py), candidates = those 24
languages, every backend through the public `LanguageIdentifier` (screening included). Accuracy is
the best guess (min_confidence=0; "und" counts as wrong); the default backend is also shown at its
calibrated threshold. Backends are timed in turns over the same chunks of texts, so that load from
other processes falls on all of them alike; model loading is timed apart, once per language.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_langid [--per-source 75] [--seed 0] [--repeats 2]
    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_langid --tuning --no-write   # the tuning sample
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from bench._report import markdown_table, write_section
from bench.langid_texts import LANGUAGES, BenchText, build
from mlgrpo.langid import DEFAULT_MIN_CONFIDENCE, LanguageIdentifier

BACKEND_NAMES = ("script", "langdetect", "lingua", "fasttext", "default")
CHUNKS = 20
THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
GOAL_SPEEDUP, GOAL_MIN_ACCURACY = 20.0, 0.85


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
    return sum(g.language == t.language for t, g in pairs) / len(pairs)


def calibration_rows(texts: list[BenchText], guesses: list) -> list[list]:
    rows = []
    for threshold in THRESHOLDS:
        kept = [(t, g) for t, g in zip(texts, guesses) if g.language != "und" and g.confidence >= threshold]
        right = sum(g.language == t.language for t, g in kept)
        rows.append([threshold, len(kept) / len(texts), right / max(1, len(kept)), right / len(texts)])
    return rows


def accuracy_rows(texts, guesses, cpu, wall, load) -> list[list]:
    """Per language: every backend, then the default on names and on UI strings; then summaries."""
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


def goal_lines(texts, guesses, cpu) -> list[str]:
    default = accuracy(texts, guesses["default"])
    best_name = max((b for b in BACKEND_NAMES if b != "default"), key=lambda b: accuracy(texts, guesses[b]))
    best = accuracy(texts, guesses[best_name])
    speedup = cpu["langdetect"] / cpu["default"]
    per_language = {
        lang: accuracy(texts, guesses["default"], lambda t, lang=lang: t.language == lang) for lang in LANGUAGES
    }
    below = [f"{lang} {acc:.3f}" for lang, acc in sorted(per_language.items(), key=lambda kv: kv[1]) if acc < GOAL_MIN_ACCURACY]
    return [
        f"- default vs the best single backend ({best_name}): {default:.4f} vs {best:.4f} "
        f"({'met' if default >= best else 'MISSED by ' + format(best - default, '.4f')}).",
        f"- default speed: {speedup:.1f}x langdetect in CPU time (goal {GOAL_SPEEDUP:.0f}x: "
        f"{'met' if speedup >= GOAL_SPEEDUP else 'MISSED by a factor ' + format(GOAL_SPEEDUP / speedup, '.2f')}).",
        f"- no language below {GOAL_MIN_ACCURACY}: "
        + ("met." if not below else f"MISSED for {len(below)} of {len(LANGUAGES)}: {', '.join(below)}."),
    ]


def why_lines(texts, guesses) -> str:
    def below(source: str) -> str:
        accs = {
            lang: accuracy(texts, guesses["default"], lambda t, lang=lang: t.language == lang and t.source == source)
            for lang in LANGUAGES
        }
        low = [f"{lang} {acc:.2f}" for lang, acc in sorted(accs.items(), key=lambda kv: kv[1]) if acc < GOAL_MIN_ACCURACY]
        return f"{len(low)} ({', '.join(low)})" if low else "none"

    return (
        "Why the misses. (1) Names: transliterated proper names carry almost no language signal "
        '("Rubel Soviet" is Indonesian, "Kiromania" Swahili, "Slovenian Tolar" English), and every '
        f"backend does far better on UI strings. Languages below {GOAL_MIN_ACCURACY} with the default, on "
        f"names: {below('cldr')}; on UI strings: {below('ui')}. Both models are wrong together on most "
        "of them: on the tuning sample, a guess right whenever fastText's or lingua's top answer is right "
        "would still leave id near 0.69 and sw near 0.80, so no way of combining the two reaches 0.85 "
        "there; per-language biases tuned on the tuning sample raised its worst language to 0.75 but "
        "left this sample's at 0.63-0.66 (overfitting). Excluding texts spelled alike up to diacritics "
        "and untranslated UI strings changed accuracy by under a point. (2) Speed: the default sends "
        "texts fastText is unsure of (below 0.8: 21% of the tuning sample) to lingua, about 0.2 ms each "
        "for the 11 Latin-script candidates; the rest is Python around two native calls (screening, "
        "script shares: about 0.05 ms). Batching fastText does not help: fasttext-predict 0.9.2.4's "
        "list predict returns labels without probabilities, and measured no faster per text."
    )


def report(texts, guesses, cpu, wall, load, excluded, args) -> str:
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
    return "\n\n".join(
        [
            intro,
            markdown_table(headers, accuracy_rows(texts, guesses, cpu, wall, load)),
            "Goals:\n" + "\n".join(goal_lines(texts, guesses, cpu)),
            why_lines(texts, guesses),
            f"Default backend at min_confidence thresholds (the shipped default is "
            f"{DEFAULT_MIN_CONFIDENCE}); coverage = share of texts answered:",
            markdown_table(["threshold", "coverage", "precision", "accuracy"], calibration_rows(texts, guesses["default"])),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-source", type=int, default=75, help="texts per language and source")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2, help="timed passes; the fastest counts")
    parser.add_argument("--no-write", action="store_true", help="print only; leave reports/ alone")
    parser.add_argument("--tuning", action="store_true", help="seed 1 by default, from what seed 0 leaves")
    args = parser.parse_args(argv)
    if args.tuning:
        if args.seed == 0:
            args.seed = 1
        if not args.no_write:
            parser.error("--tuning is for choosing constants: add --no-write (the report shows seed 0)")
    texts, excluded = build(args.per_source, args.seed, avoid_seed=0 if args.tuning else None)
    guesses, cpu, wall, load = run_backends(texts, args.repeats)
    body = report(texts, guesses, cpu, wall, load, excluded, args)
    print(body)
    if not args.no_write:
        command = "OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_langid"
        path = write_section("langid", "Language identification", body, command)
        print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
