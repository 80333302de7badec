"""Benchmark: is language consistency right on real text it was never tuned on? Correct text must be judged in
its language, a neighbour's translation of the same message and an English answer must not.

`mlgrpo.rewards.language_consistency` > 0.5 means "in the row's language". Candidates: the 27 languages of
bench/langid_texts.py, so that every neighbour competes. The splits are whole catalogues (issue 28), so that
a constant chosen on one project's wording is tested on another's (`bench/consistency_sources.py`):
- the report: TEST_SOURCES, catalogues nothing in mlgrpo trains or tunes on (django CMS, Oscar, humanize,
  mkdocs-material), up to PER_SOURCE texts per source, language and kind; per language the share with its 95%
  Wilson interval and the worst source, per neighbour pair, per source; and `mlgrpo langid`'s speed against
  langdetect's through the CLI on these texts, in the same run (`bench.bench_langid.cli_speed`);
- below it, as before issue 28, the corpus's test split (held-out rows of the catalogues the model trains on),
  the built-in suites' references (numbers, dates) and the Sphinx and allauth test halves (`build_sets`);
- `--tune`: the corpus's tune split and the whole TUNE_SOURCES (Sphinx, django-allauth), for MIN_PROBABILITY.
Kinds of text, in every set:
- correct: the source's translations (they keep product names and acronyms: "GIMP", "PEM", "Sphinx");
- neighbour: the translation of the same English message into a close neighbour of the row's language
  (PAIRS), where it is spelled differently from anything the row's language writes in the sources and
  is not made of common words of the row's language alone (Spanish "Sobre este documento" is Portuguese
  too; `mlgrpo.langid.lexicon`); both judged on the words the judge counts (`voting_text`: "inválido
  numfig_format:" is Portuguese as much as Spanish);
- English: the English message itself as the answer to a non-English row, on the same terms.
Goals: correct >= 0.97 in every language; neighbour and English <= 0.05; `mlgrpo langid` >= 20x langdetect.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_consistency           # the report's section and the data card's
    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_consistency --tune    # choose MIN_PROBABILITY
"""

from __future__ import annotations

import argparse
import functools
import math
import random
from collections import defaultdict

from bench import consistency_sources
from bench._report import markdown_table, write_section
from bench.langid_texts import LANGUAGES, BenchText, _owners, _unseen_half, pools, unseen_pairs
from mlgrpo.langid import corpus
from mlgrpo.langid.lexicon import in_common_words
from mlgrpo.rewards.language import MIN_PROBABILITY, language_consistency, voting_text

# (row language, the neighbour whose translation is given): the pairs the issue names, both ways, and more.
PAIRS = (("es", "pt"), ("pt", "es"), ("ru", "uk"), ("uk", "ru"), ("sv", "da"), ("da", "sv"), ("zh", "ja"), ("ja", "zh"),
         ("ar", "fa"), ("fa", "ar"), ("ur", "fa"), ("fa", "ur"), ("de", "nl"), ("nl", "de"), ("it", "es"), ("es", "it"),
         ("fr", "it"), ("it", "fr"), ("id", "sw"), ("hi", "ur"))
SUITES = ("numbers", "dates")
GOAL_CORRECT, GOAL_WRONG = 0.97, 0.05
SUITE_ITEMS = 50  # references per suite and language
MIN_PAIR = 20  # a pair with fewer texts is shown but not judged
PER_SOURCE = 300  # unseen texts per source, language and kind: ~600-1,200 a language, an interval of about +-1% at 0.97
def translations(split: str) -> dict[str, dict[str, str]]:
    """English message -> {language: translation} over every catalogue, for translations of `split`
    (the corpus's split for Django and DRF, the unseen catalogues' half for Sphinx and allauth)."""
    table: dict[str, dict[str, str]] = defaultdict(dict)
    for package in ("django", "rest_framework"):
        for language, english, translation in corpus.catalogue_pairs(package):
            text = corpus.clean(translation)
            if corpus.split_of(text) == split:
                table[corpus.clean(english)].setdefault(language, text)
    for _, language, english, translation in unseen_pairs():
        if _unseen_half(translation) == split:
            table[english].setdefault(language, translation)
    return table


def suite_references(language: str, per: int, seed: int) -> list[str]:
    from mlgrpo.data.suites.loader import get_spec, language_items

    found = []
    for suite in SUITES:
        if language in get_spec(suite).languages:
            items = language_items(suite, language).items
            found += [item.answers[0] for item in random.Random(f"{seed}/{suite}/{language}").sample(items, min(per, len(items)))]
    return found


def build_sets(split: str, seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """Set name -> [(row language, completion)]: every text of the split (`seed` draws the suites' references)."""
    available = pools(split)
    sets: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for language in LANGUAGES:
        for kind in ("ui", "ui-unseen", "words"):
            sets["correct"] += [(language, t) for t in available[language, kind]]
        sets["correct"] += [(language, t) for t in suite_references(language, SUITE_ITEMS, seed)]
    by_message = translations(split)
    owners = _owners()
    spelled = defaultdict(set)  # language -> the folded spellings it writes anywhere in the sources
    for spelling, languages in owners.items():
        for language in languages:
            spelled[language].add(spelling)

    wrong = functools.partial(is_wrong, spelled=spelled)

    for row, neighbour in PAIRS:
        found = [(row, by_lang[neighbour]) for by_lang in by_message.values()
                 if row in by_lang and neighbour in by_lang and wrong(by_lang[neighbour], row)]
        sets[f"neighbour:{neighbour} text in a {row} row"] = found
    for language in LANGUAGES:
        if language == "en":
            continue
        found = [(language, english) for english, by_lang in by_message.items()
                 if language in by_lang and wrong(english, language)]
        sets["english"] += found
    return sets


def is_wrong(text: str, row: str, spelled: dict[str, set[str]]) -> bool:
    """Not also the row language's: its voting words (those the judge counts: code, acronyms, numbers and
    names left out, `voting_text`) spelled differently from anything that language writes anywhere in
    the sources (`spelled`: language -> folded spellings; "Retorno" is Portuguese and Spanish; "Index" English
    and German; "inválido numfig_format:" is "inválido"), and not all common words of it ("Sobre este documento")."""
    words = voting_text(text, row)
    return corpus.has_letters(words) and not {corpus.fold(text), corpus.fold(words)} & spelled[row] and not in_common_words(words, row)


def judged(items: list[tuple[str, str]], min_probability: float) -> list[float | None]:
    languages = [lang for lang, _ in items]
    return language_consistency([""] * len(items), [t for _, t in items], language=languages,
                                candidates=list(LANGUAGES), min_probability=min_probability)


def shares(items, scores, key) -> dict[str, tuple[float, int]]:
    """Per group (key of (language, text)): share judged in the row's language, and the count (None left out)."""
    groups: dict[str, list[bool]] = defaultdict(list)
    for item, score in zip(items, scores):
        if score is not None:
            groups[key(item)].append(score > 0.5)
    return {k: (sum(v) / len(v), len(v)) for k, v in sorted(groups.items())}


def _judged_in(items, scores) -> list[bool]:
    return [score > 0.5 for score in scores if score is not None]


def report(sets, floor: float) -> str:
    results = {name: judged(items, floor) for name, items in sets.items()}
    correct = shares(sets["correct"], results["correct"], lambda it: it[0])
    english = shares(sets["english"], results["english"], lambda it: it[0])
    rows = [[lang, correct.get(lang, ("", 0))[1], correct.get(lang, (float("nan"),))[0],
             english.get(lang, ("", 0))[1], english.get(lang, (float("nan"),))[0]] for lang in LANGUAGES]
    pairs = {name.split(":", 1)[1]: _judged_in(sets[name], results[name]) for name in sets if name.startswith("neighbour:")}
    pair_rows = [[name, len(v), sum(v) / len(v) if v else float("nan")] for name, v in pairs.items()]
    every_pair = [ok for v in pairs.values() for ok in v]
    worst_correct = min(correct.items(), key=lambda kv: kv[1][0])
    judged_pairs = [r for r in pair_rows if r[1] >= MIN_PAIR]
    few = [f"{r[0]} ({r[1]})" for r in pair_rows if r[1] < MIN_PAIR]
    worst_pair = max(judged_pairs, key=lambda r: r[2])
    worst_english = max(english.items(), key=lambda kv: kv[1][0])
    verdict = lambda ok: "met" if ok else "MISSED"  # noqa: E731
    goals = [
        f"- correct text judged in its language: worst {worst_correct[0]} {worst_correct[1][0]:.3f} "
        f"(goal >= {GOAL_CORRECT} in every language: {verdict(worst_correct[1][0] >= GOAL_CORRECT)}; "
        f"{sum(v >= GOAL_CORRECT for v, _ in correct.values())} of {len(correct)} languages meet it).",
        f"- a neighbour's translation judged in the row's language: {sum(every_pair) / len(every_pair):.3f} over all pairs, "
        f"worst pair {worst_pair[0]} {worst_pair[2]:.3f} (goal <= {GOAL_WRONG}: {verdict(worst_pair[2] <= GOAL_WRONG)}; "
        f"{sum(r[2] <= GOAL_WRONG for r in judged_pairs)} of {len(judged_pairs)} pairs meet it; too few texts to judge, "
        f"under {MIN_PAIR}: {', '.join(few) or 'none'}).",
        f"- an English answer judged in the row's language: worst {worst_english[0]} {worst_english[1][0]:.3f} "
        f"(goal <= {GOAL_WRONG} in every language: {verdict(worst_english[1][0] <= GOAL_WRONG)}; "
        f"{sum(v <= GOAL_WRONG for v, _ in english.values())} of {len(english)} languages meet it).",
    ]
    return "\n\n".join([
        f"language_consistency with min_probability {floor}; candidates = the {len(LANGUAGES)} languages. "
        f"Correct text: {len(sets['correct'])} ({SUITE_ITEMS} suite references of each of {', '.join(SUITES)} per language, "
        "and every UI translation of the test split and of the catalogues never trained on, and every CLDR word of the "
        f"test split); neighbours' translations of the same message: {sum(len(v) for v in pairs.values())}; English "
        f"messages as answers to non-English rows: {len(sets['english'])}. Every text of the split is judged (until "
        "2026-12-02 a sample of 50 per kind and 150 per pair was). 'Judged in' = consistency > 0.5; rows without any "
        "voting word are left out.",
        "Goals:\n" + "\n".join(goals),
        markdown_table(["language", "correct texts", "judged in its language", "English answers", "judged in the row's language"], rows),
        markdown_table(["neighbour pair", "texts", "judged in the row's language"], pair_rows),
    ])


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a share (Wilson 1927): it stays inside [0, 1] and is not empty at 0 or n.

    >>> [round(x, 4) for x in wilson(97, 100)]
    [0.9155, 0.9897]
    """
    if n == 0:
        return float("nan"), float("nan")
    p, z2 = successes / n, z * z
    centre, half = (p + z2 / (2 * n)) / (1 + z2 / n), z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def source_sets(sources: tuple[str, ...], per_source: int, seed: int = 0) -> dict[str, list[tuple[str, str, str]]]:
    """Set name -> [(source, row language, completion)] from whole catalogues: each source's correct texts (up to
    `per_source` a language, drawn with `seed`), its neighbours' translations of the same message (PAIRS) and its
    English messages as answers, on the terms of `build_sets`; a text two languages write alike is left out."""
    owners = consistency_sources.owners(tuple(consistency_sources.TUNE_SOURCES) + tuple(consistency_sources.TEST_SOURCES))
    spelled = defaultdict(set)
    for spelling, languages in owners.items():
        for language in languages:
            spelled[language].add(spelling)
    wrong = functools.partial(is_wrong, spelled=spelled)
    sets: dict[str, list[tuple[str, str, str]]] = defaultdict(list)

    def draw(items: list, *key) -> list:
        items = sorted(set(items))
        return random.Random("/".join(map(str, (seed,) + key))).sample(items, min(per_source, len(items)))

    for source in sources:
        by_message: dict[str, dict[str, str]] = defaultdict(dict)
        correct: dict[str, list[str]] = defaultdict(list)
        for language, english, translation in consistency_sources.source_triples(source):
            if len(owners.get(corpus.fold(translation), ())) <= 1:
                correct[language].append(translation)
            by_message[english].setdefault(language, translation)
        for language, texts in sorted(correct.items()):
            sets["correct"] += [(source, language, t) for t in draw(texts, source, language)]
        for row, neighbour in PAIRS:
            found = [by_lang[neighbour] for by_lang in by_message.values()
                     if row in by_lang and neighbour in by_lang and wrong(by_lang[neighbour], row)]
            sets[f"neighbour:{neighbour} text in a {row} row"] += [(source, row, t) for t in draw(found, source, row, neighbour)]
        for language in sorted(correct):
            found = [english for english, by_lang in by_message.items() if language in by_lang and wrong(english, language)]
            sets["english"] += [(source, language, t) for t in draw(found, source, language, "en")]
    return sets


def _share_cell(oks: list[bool]) -> str:
    if not oks:
        return "-"
    low, high = wilson(sum(oks), len(oks))
    return f"{sum(oks) / len(oks):.3f} [{low:.3f}, {high:.3f}]"


def _worst_source(oks_by_source: dict[str, list[bool]], worst=min) -> str:
    judged_sources = {s: v for s, v in oks_by_source.items() if v}
    if not judged_sources:
        return "-"
    name = worst(judged_sources, key=lambda s: sum(judged_sources[s]) / len(judged_sources[s]))
    v = judged_sources[name]
    return f"{name} {sum(v) / len(v):.3f} ({len(v)})"


def by_source_report(sets, floor: float, sources: tuple[str, ...]) -> tuple[str, dict]:
    """The unseen sources' section and the figures its goals read: per language (pooled over sources, with the
    95% interval and the worst source), per neighbour pair, per source."""
    verdicts = {}
    for name, items in sets.items():
        scores = judged([(lang, text) for _, lang, text in items], floor)
        verdicts[name] = [(source, lang, score > 0.5) for (source, lang, _), score in zip(items, scores) if score is not None]

    def grouped(name: str, key) -> dict[str, dict[str, list[bool]]]:
        found: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
        for source, lang, ok in verdicts.get(name, []):
            found[key(source, lang)][source].append(ok)
        return found

    def pooled(by_source: dict[str, list[bool]]) -> list[bool]:
        return [ok for v in by_source.values() for ok in v]

    correct, english = grouped("correct", lambda s, lang: lang), grouped("english", lambda s, lang: lang)
    languages = [lang for lang in LANGUAGES if lang in correct]
    rows = [[lang, len(pooled(correct[lang])), _share_cell(pooled(correct[lang])), _worst_source(correct[lang]),
             len(pooled(english[lang])), _share_cell(pooled(english[lang])), _worst_source(english[lang], max)]
            for lang in languages]
    pairs = {name.split(":", 1)[1]: grouped(name, lambda s, lang: "all")["all"] for name in sets if name.startswith("neighbour:")}
    pair_rows = [[name, len(pooled(v)), _share_cell(pooled(v)), _worst_source(v, max)] for name, v in pairs.items()]
    source_rows = []
    for source in sources:
        of = lambda name: [ok for s, _, ok in verdicts.get(name, []) if s == source]  # noqa: E731
        neighbour = [ok for name in sets if name.startswith("neighbour:") for s, _, ok in verdicts[name] if s == source]
        source_rows.append([source, consistency_sources.PACKAGES[source], len({lang for s, lang, _ in verdicts["correct"] if s == source}),
                            len(of("correct")), _share_cell(of("correct")), len(neighbour), _share_cell(neighbour),
                            len(of("english")), _share_cell(of("english"))])
    share = lambda oks: sum(oks) / len(oks)  # noqa: E731
    figures = {
        "correct": {lang: share(pooled(correct[lang])) for lang in languages},
        "pairs": {name: share(pooled(v)) for name, v in pairs.items() if len(pooled(v)) >= MIN_PAIR},
        "few_pairs": {name: len(pooled(v)) for name, v in pairs.items() if len(pooled(v)) < MIN_PAIR},
        "english": {lang: share(pooled(english[lang])) for lang in languages if pooled(english[lang])},
        "neighbour_all": share([ok for v in pairs.values() for ok in pooled(v)]),
    }
    tables = "\n\n".join([
        markdown_table(["language", "correct texts", "judged in its language [95% interval]", "worst source (texts)",
                        "English answers", "judged in the row's language [95% interval]", "worst source (texts)"], rows),
        markdown_table(["neighbour pair", "texts", "judged in the row's language [95% interval]", "worst source (texts)"], pair_rows),
        markdown_table(["source", "package", "languages", "correct texts", "judged in its language", "neighbours' texts",
                        "judged in the row's language", "English answers", "judged in the row's language"], source_rows),
    ])
    return tables, figures


def goal_lines(figures: dict, missing: list[str]) -> list[str]:
    verdict = lambda ok: "met" if ok else "MISSED"  # noqa: E731
    correct, pairs, english = figures["correct"], figures["pairs"], figures["english"]
    worst_correct = min(correct, key=correct.get)
    below = [f"{lang} {v:.3f}" for lang, v in sorted(correct.items(), key=lambda kv: kv[1]) if v < GOAL_CORRECT]
    worst_pair = max(pairs, key=pairs.get)
    worst_english = max(english, key=english.get)
    few = ", ".join(f"{name} ({n})" for name, n in figures["few_pairs"].items()) or "none"
    return [
        f"- correct text judged in its language: worst {worst_correct} {correct[worst_correct]:.3f} (goal >= {GOAL_CORRECT} in "
        f"every language: {verdict(not below and not missing)}; {len(correct) - len(below)} of {len(correct)} languages with "
        f"an unseen source meet it; below: {', '.join(below) or 'none'}; no unseen source: {', '.join(missing) or 'none'}).",
        f"- a neighbour's translation judged in the row's language: {figures['neighbour_all']:.3f} over all pairs, worst pair "
        f"{worst_pair} {pairs[worst_pair]:.3f} (goal <= {GOAL_WRONG}: {verdict(pairs[worst_pair] <= GOAL_WRONG)}; "
        f"{sum(v <= GOAL_WRONG for v in pairs.values())} of {len(pairs)} pairs meet it; under {MIN_PAIR} texts, not judged: {few}).",
        f"- an English answer judged in the row's language: worst {worst_english} {english[worst_english]:.3f} (goal <= "
        f"{GOAL_WRONG} in every language: {verdict(english[worst_english] <= GOAL_WRONG)}; "
        f"{sum(v <= GOAL_WRONG for v in english.values())} of {len(english)} languages meet it).",
    ]


def tune(sets, by_source) -> None:
    """Per floor, the worst correct language, pair and English share over the corpus's tune split and the tune sources."""
    for floor in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5):
        results = {name: judged(items, floor) for name, items in sets.items()}
        correct = shares(sets["correct"], results["correct"], lambda it: it[0])
        pairs = {n: _judged_in(sets[n], results[n]) for n in sets if n.startswith("neighbour:")}
        pairs = {n: v for n, v in pairs.items() if len(v) >= MIN_PAIR}  # as the report judges them
        worst_pair = max(pairs, key=lambda n: sum(pairs[n]) / max(1, len(pairs[n])))
        english = shares(sets["english"], results["english"], lambda it: it[0])
        worst = min(correct.items(), key=lambda kv: kv[1][0])
        _, figures = by_source_report(by_source, floor, tuple(consistency_sources.TUNE_SOURCES))
        print(f"min_probability {floor}: corpus tune split: worst correct {worst[0]} {worst[1][0]:.3f}; worst pair {worst_pair} "
              f"{sum(pairs[worst_pair]) / max(1, len(pairs[worst_pair])):.3f}; worst English {max(v for v, _ in english.values()):.3f}")
        print("  tune sources: " + " ".join(line.split(" (goal")[0][2:] + ";" for line in goal_lines(figures, [])))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-source", type=int, default=PER_SOURCE, help="texts per source, language and kind")
    parser.add_argument("--repeats", type=int, default=2, help="timed CLI runs per backend; the fastest counts")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--tune", action="store_true", help="try floors on the tune split and sources, and print them")
    args = parser.parse_args(argv)
    if args.tune:
        tune(build_sets("tune", args.seed), source_sets(tuple(consistency_sources.TUNE_SOURCES), args.per_source, args.seed))
        return
    sources = tuple(consistency_sources.TEST_SOURCES)
    missing = consistency_sources.missing_languages(sources)
    unseen = source_sets(sources, args.per_source, args.seed)
    tables, figures = by_source_report(unseen, MIN_PROBABILITY, sources)
    from bench.bench_langid import GOAL_SPEEDUP, cli_speed

    texts = [BenchText(lang, "ui-unseen", text) for name in ("correct", "english") for _, lang, text in unseen[name]]
    cli = cli_speed(texts, args.repeats)
    speedup = cli["langdetect"][0] / cli["default"][0]
    speed = (f"- speed, in the same run: `mlgrpo langid` on {cli['lines'][0]:,} of these texts (one a line, candidates the "
             f"{len(LANGUAGES)} languages, start-up included, best of {args.repeats}) {cli['default'][0]:.2f} s CPU against "
             f"`mlgrpo langid --backend langdetect`'s {cli['langdetect'][0]:.1f} s: {speedup:.1f}x "
             f"(goal {GOAL_SPEEDUP:.0f}x: {'met' if speedup >= GOAL_SPEEDUP else 'MISSED'}).")
    judged_texts = sum(len(v) for v in unseen.values())
    unseen_body = "\n\n".join([
        f"language_consistency with min_probability {MIN_PROBABILITY}; candidates = the {len(LANGUAGES)} languages. Texts from "
        f"catalogues nothing in mlgrpo trains or tunes on (`bench/consistency_sources.py`: {', '.join(sources)}), up to "
        f"{args.per_source} per source, language and kind, seed {args.seed}: {judged_texts} texts. Correct text: the source's "
        "translations; neighbour: the translation of the same message into a close neighbour of the row's language (PAIRS) "
        "in the same source; English: the message itself as the answer to a non-English row; neighbours' and English texts "
        "that the row's language also writes are left out (`is_wrong`). 'Judged in' = consistency > 0.5; a share is "
        "given with its 95% Wilson interval; the worst source is the one with the lowest share (correct) or the highest "
        "(wrong answers). Constants were chosen on other catalogues (Sphinx, django-allauth: `--tune`).",
        "Goals, by unseen source:\n" + "\n".join(goal_lines(figures, missing) + [speed]),
        tables,
    ])
    seen_body = report(build_sets("test", args.seed), MIN_PROBABILITY)
    body = unseen_body + "\n\n### Held-out rows of the sources the model trains on (the corpus's test split)\n\n" + seen_body
    print(body)
    if not args.no_write:
        from bench.bench_langid import CARD

        command = "OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_consistency"
        written = write_section("consistency", "Language consistency on real text", body, command)
        card = write_section("unseen", "Language judgement on catalogues never trained or tuned on", unseen_body, command, CARD)
        print(f"\nwritten to {written} and {card}")


if __name__ == "__main__":
    main()
