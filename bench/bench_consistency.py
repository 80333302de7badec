"""Benchmark: is language consistency right on real text? Correct text must be judged in its language,
a neighbour's translation of the same message and an English answer must not.

`mlgrpo.rewards.language_consistency` > 0.5 means "in the row's language". Candidates: the 27 languages of
bench/langid_texts.py, so that every neighbour competes. Texts none of which mlgrpo's language model
trained on (the corpus's test split, and the Sphinx and django-allauth catalogues):
- correct: the built-in suites' references (numbers, dates: SUITE_ITEMS items of each suite in each of its
  languages, drawn with the seed), every UI translation (they keep product names and acronyms: "GIMP",
  "PEM", "Sphinx") and CLDR word of the split;
- neighbour: the translation of the same English message into a close neighbour of the row's language
  (PAIRS), where it is spelled differently from anything the row's language writes in the sources and
  is not made of common words of the row's language alone (Spanish "Sobre este documento" is Portuguese
  too; `mlgrpo.langid.lexicon`); both judged on the words the judge counts (`voting_text`: "inválido
  numfig_format:" is Portuguese as much as Spanish);
- English: the English message itself as the answer to a non-English row, on the same terms.
Every such text of the split is judged (no sample: the pools hold 100-1,300 texts a language, 120-390 a pair).
Goals: correct >= 0.97 in every language; neighbour and English <= 0.05.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_consistency           # the report's section
    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_consistency --tune    # choose MIN_PROBABILITY
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict

from bench._report import markdown_table, write_section
from bench.langid_texts import LANGUAGES, _owners, _unseen_half, pools, unseen_pairs
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

    def wrong(text: str, row: str) -> bool:
        """Not also the row language's: its voting words (those the judge counts: code, acronyms, numbers and
        names left out, `voting_text`) spelled differently from anything that language writes anywhere in
        the sources ("Retorno" is Portuguese and Spanish; "Index" English and German; "inválido numfig_format:"
        is "inválido"), and not all common words of it ("Sobre este documento")."""
        words = voting_text(text, row)
        return corpus.has_letters(words) and not {corpus.fold(text), corpus.fold(words)} & spelled[row] and not in_common_words(words, row)

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


def tune(sets) -> None:
    for floor in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5):
        results = {name: judged(items, floor) for name, items in sets.items()}
        correct = shares(sets["correct"], results["correct"], lambda it: it[0])
        pairs = {n: _judged_in(sets[n], results[n]) for n in sets if n.startswith("neighbour:")}
        pairs = {n: v for n, v in pairs.items() if len(v) >= MIN_PAIR}  # as the report judges them
        worst_pair = max(pairs, key=lambda n: sum(pairs[n]) / max(1, len(pairs[n])))
        english = shares(sets["english"], results["english"], lambda it: it[0])
        worst = min(correct.items(), key=lambda kv: kv[1][0])
        print(f"min_probability {floor}: worst correct {worst[0]} {worst[1][0]:.3f}; worst pair {worst_pair} "
              f"{sum(pairs[worst_pair]) / max(1, len(pairs[worst_pair])):.3f}; worst English {max(v for v, _ in english.values()):.3f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--tune", action="store_true", help="try floors on the tune split and print them")
    args = parser.parse_args(argv)
    if args.tune:
        tune(build_sets("tune", args.seed))
        return
    body = report(build_sets("test", args.seed), MIN_PROBABILITY)
    print(body)
    if not args.no_write:
        command = "OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_consistency"
        print(f"\nwritten to {write_section('consistency', 'Language consistency on real text', body, command)}")


if __name__ == "__main__":
    main()
