"""Language consistency: the share of a completion's words written in the row's language.

The anchor is DeepSeek-R1 (2025, section 2.3.4): "the proportion of target language words". Where this
differs, and why:
- The unit is a word, or a character in scripts written without spaces, weighed in English words
  (`units.py`): counting letters made 4 Latin letters of "GIMP" outweigh 4 Han characters.
- Names, acronyms, numbers, URLs, code and punctuation do not vote (`units.py`), unless nothing else does.
- A word is judged with its segment (its run of one script in one clause), not alone: one short word
  says little about its language ("de" is Spanish, French, Portuguese...), a clause says a lot.

A segment counts for the row's language when
1. (no model) its script is one the language is written in and no other candidate writes it (Greek for
   "el" among [el, en]), or it holds kana and the language is Japanese; against when the language is not
   written in its script (Latin words in a "zh" row);
2. (no model) every voting word of the completion is a common word of the row's language
   (`mlgrpo.langid.lexicon`: Zipf >= 4 in wordfreq, or a CLDR calendar or unit word): "14. September 1994"
   is German, "Sobre este documento" Spanish, whatever else also writes them. Scripts written without
   spaces have no such words and go to 4;
3. against when it holds a word the row's language does not write (absent from its large wordfreq list at
   Zipf >= 2, for the 21 languages wordfreq has one) that is a common word of another candidate written in
   the script, English aside: Portuguese "limpar" in a Spanish row ("limpiar");
4. otherwise when the language identifier finds the row's language at least `min_probability` (default
   MIN_PROBABILITY) times as probable as the likeliest candidate that writes the script. The identifier's probabilities
   are calibrated (`mlgrpo.langid`), so a neighbour's translation (Portuguese in a Spanish row) gets the
   Spanish a small probability, while a text that is Spanish and Portuguese alike keeps a fair share.
   Text the identifier cannot judge counts for the row. Han text without kana, when both Chinese and
   Japanese are candidates, is judged between those two alone, and text of numerals and date characters alone
   counts for both (both write "三百九十六" alike; 删除 and 名字 are Chinese, 削除 and 名前 Japanese):
   `mlgrpo.langid.combined.chinese_or_japanese`.
5. a segment judged against, all of whose words the row's language lists at Zipf >= LOAN_ZIPF in wordfreq
   (loanwords it writes: "email" is listed for Danish at 3.7), counts after all when another segment of the
   same completion counts: "Email (valgfri)" is Danish UI text, while the English answer "Email (optional)"
   still scores 0. DeepSeek-R1 counts "target language words", and a loanword in use is one.

reward = weight of counting units / weight of all voting units; None when the row's language is missing,
or the completion has nothing that votes. Measured in reports/benchmarks.md (`bench.bench_consistency`).
Knows nothing about trainers, advantages or MLflow.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.rewards.registry import register
from mlgrpo.rewards.texts import as_text, base_language, column
from mlgrpo.rewards.units import DENSE_GROUPS, DENSE_SCRIPTS, Segment, segments

# Chosen on the tune material, never on the test sources (`python -m bench.bench_consistency --tune`, 2026-12-03, model v5
# with the gsm source, every text of the corpus's tune split and up to 300 texts per language and kind of the whole
# Sphinx and django-allauth catalogues, the default backend at temperature 5.7). Corpus tune split: correct text at worst
# Urdu 0.967 up to 0.3, Danish 0.965 at 0.4; a neighbour's text gets through 5.1% at 0.3 (Portuguese in Spanish rows),
# 5.4% at 0.25, 9.7% at 0.1 (Swedish in Danish rows); 4.0% at 0.4; English answers 2.6% at 0.3, 1.7% at 0.4.
# Tune catalogues: correct text at worst Greek 0.973 up to 0.3, German 0.969 at 0.4; worst pair 3.4% at 0.3
# (Swedish in Danish rows), 2.7% at 0.4; English 2.1% at both. 0.4 is the lowest floor whose wrong-language shares
# stay under 5% on both; no floor reaches 0.97 for every language on both (Danish, German). Rerun after Han text went to
# the whole model (`combined.chinese_or_japanese`): every figure above the same.
MIN_PROBABILITY = 0.4
# Rule 5's floor, on the tune split with the rest as it is (`bench_consistency`): Zipf 3.5 and 3.0 gave the same correct
# text (Danish 0.970, Swedish 0.974 -> 0.983), English answers judged in the row's language at worst 0.023 and 0.029.
LOAN_ZIPF = 3.5


@functools.lru_cache(maxsize=256)
def _writers(group: str, candidates: tuple[str, ...]) -> frozenset[str]:
    """The candidates written in the script group ("CJK": Han and kana, zh and ja)."""
    from mlgrpo.langid.script import SCRIPT_LANGUAGES

    if group == "CJK":
        return frozenset(candidates) & (SCRIPT_LANGUAGES["Han"] | SCRIPT_LANGUAGES["Japanese"])
    return frozenset(candidates) & SCRIPT_LANGUAGES.get(group, frozenset(candidates))


def _written_in(language: str, group: str) -> bool:
    return bool(_writers(group, (language,)))


def fast_verdict(segment: Segment, language: str, candidates: tuple[str, ...]) -> bool | None:
    """True/False when the script alone decides whether `segment` is in `language`; None when only a
    language identifier can (another candidate is written in the same script)."""
    if not _written_in(language, segment.group):
        return False
    if segment.group == "CJK" and segment.kana:
        return language == "ja"
    return None if _writers(segment.group, candidates) - {language} else True


@functools.lru_cache(maxsize=8)
def _identifier(candidates: tuple[str, ...] | None, backend: str):
    from mlgrpo.langid import LanguageIdentifier  # local: loads language models only when a row needs them

    return LanguageIdentifier(candidates=list(candidates) if candidates else None, backend=backend)


def load_models(candidates: Sequence[str], backend: str = "default") -> None:
    """Load now the identifier models and the word lists (`mlgrpo.langid.lexicon`) that scoring rows in
    `candidates` can need, rather than on the first call (a model loaded mid-step stalls it)."""
    from mlgrpo.langid.lexicon import common_words, foreign_word, listed_words
    from mlgrpo.langid.script import SCRIPT_LANGUAGES

    identifier = _identifier(tuple(candidates), backend)
    identifier.load()
    pool = tuple(sorted(identifier.candidates))
    for language in pool:
        common_words(language)
        listed_words(language, LOAN_ZIPF)  # rule 5's
        for script, writers in SCRIPT_LANGUAGES.items():  # rule 3's word lists, for the scripts it is written in
            if language in writers and script not in DENSE_SCRIPTS:
                foreign_word("", language, _neighbours(script, pool))


def language_probabilities(text: str, candidates: tuple[str, ...] | None, backend: str) -> dict[str, float] | None:
    """The identifier backend's calibrated probability of each candidate language for `text`, or None when
    no language can be told from it (no letters, garbled text, or the backend cannot tell)."""
    return _probabilities_cached((text,), candidates, backend)[text]


def _probabilities_many(texts: tuple[str, ...], candidates: tuple[str, ...] | None, backend: str) -> list[dict | None]:
    from mlgrpo.langid.registry import Sample
    from mlgrpo.langid.screen import screen

    identifier = _identifier(candidates, backend)
    cleaned = [screen(t) for t in texts]
    samples = [Sample(c) for c in cleaned if c is not None]
    found = iter(identifier.backend.probabilities_many(samples, identifier.candidates) if samples else [])
    return [None if c is None else (dict(next(found)) or None) for c in cleaned]


def voting_text(text: str, language: str) -> str:
    """The words of `text` that vote in a `language` row, joined by spaces: names, acronyms, numbers and code
    left out, unless nothing else votes (`units.py`).

    >>> voting_text("inválido numfig_format: (GIMP)", "es"), voting_text("URL", "es")
    ('inválido', 'URL')
    """
    return " ".join(s.text for s in _voting(segments(as_text(text), not _written_in(language, "Latin"))))


def _check_language(params: Mapping[str, Any]) -> None:
    candidates = params.get("candidates")
    if candidates is not None and (isinstance(candidates, str) or not all(isinstance(c, str) for c in candidates)):
        raise UserError(f"language_consistency: candidates must be a list of language codes, got {candidates!r}")
    floor = params.get("min_probability", MIN_PROBABILITY)
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0.0 <= floor <= 1.0:
        raise UserError(f"language_consistency: min_probability must be between 0 and 1, got {floor!r}")
    _identifier(tuple(candidates) if candidates else None, params.get("backend", "default"))


def _voting(segs: list[Segment]) -> list[Segment]:
    """The segments that vote: all but the neutral ones, or the neutral words when nothing else votes."""
    real = [s for s in segs if not s.neutral]
    return real or segs


@register("language_consistency", requires=("language",), check=_check_language)
def language_consistency(prompts: Sequence, completions: Sequence, *, language: Sequence | None = None,
                         candidates: Sequence[str] | None = None, backend: str = "default",
                         min_probability: float = MIN_PROBABILITY, **_: Any) -> list[float | None]:
    """Share of the completion's words in the row's language (module docstring); > 0.5: "in" it.

    `candidates`: the languages that compete for a segment (the experiment's languages; each row's
    language must be one); None means every language the identifier knows. Hand-worked, decided by
    script alone: "Γεια σου world" in an "el" row among [el, en] has 2 Greek words and 1 Latin -> 2/3;
    "GIMP 笔刷管道" in a "zh" row: GIMP is an acronym (neutral), 4 Han characters -> 1.0; "Brush Pipe"
    in a "zh" row: only neutral words, so they vote, in Latin letters -> 0.0; "123" -> None.

    >>> [None if r is None else round(r, 4) for r in language_consistency(
    ...     [""] * 4, ["Γεια σου world", "GIMP 笔刷管道", "Brush Pipe", "123"], language=["el", "zh", "zh", "zh"],
    ...     candidates=["el", "en", "zh"])]
    [0.6667, 1.0, 0.0, None]
    """
    pool = tuple(sorted(candidates)) if candidates else None
    known = _identifier(pool, backend).candidates
    rows: list[tuple[str | None, list[Segment]]] = []
    for completion, row_language in zip(completions, column(language, len(completions))):
        lang = base_language(row_language)
        if lang is not None and lang not in known:
            raise ValueError(f"row language {lang!r} is not among the language identifier's candidates "
                             f"({', '.join(sorted(known))}); add it to params.candidates")
        latin_is_foreign = lang is not None and not _written_in(lang, "Latin")
        rows.append((lang, _voting(segments(as_text(completion), latin_is_foreign)) if lang else []))

    pool_codes = tuple(sorted(known))
    verdicts = [[True] * len(segs) if _all_common(segs, lang) else [fast_verdict(s, lang, pool_codes) for s in segs]
                for lang, segs in rows]
    pending = [(i, j) for i, row in enumerate(verdicts) for j, v in enumerate(row) if v is None]
    if pending:
        han = [(i, j) for i, j in pending if rows[i][1][j].group == "CJK"]  # no kana, or it was decided
        other = [(i, j) for i, j in pending if rows[i][1][j].group != "CJK"]
        found = _probabilities_cached(tuple(dict.fromkeys(rows[i][1][j].text for i, j in other)), pool, backend)
        found.update(_han_cached(tuple(dict.fromkeys(rows[i][1][j].text for i, j in han))))
        for i, j in pending:
            segment, lang = rows[i][1][j], rows[i][0]
            verdicts[i][j] = not _neighbours_word(segment, lang, pool_codes) and _counts(
                found[segment.text], lang, _writers(segment.group, pool_codes), min_probability)

    verdicts = [_loanwords(segs, lang, row) for (lang, segs), row in zip(rows, verdicts)]
    rewards: list[float | None] = []
    for (lang, segs), row_verdicts in zip(rows, verdicts):
        total = sum(s.weight for s in segs)
        if lang is None or total == 0:
            rewards.append(None)
            continue
        rewards.append(sum(s.weight for s, ok in zip(segs, row_verdicts) if ok) / total)
    return rewards


def _loanwords(segs: list[Segment], language: str | None, verdicts: list[bool]) -> list[bool]:
    """Rule 5 of the module docstring: segments judged against that are loanwords `language` writes count for
    it when another segment of the completion counts."""
    from mlgrpo.langid.lexicon import in_listed_words

    if language is None or not any(verdicts) or all(verdicts):
        return verdicts
    return [ok or (s.group not in DENSE_GROUPS and _written_in(language, s.group) and in_listed_words(s.text, language, LOAN_ZIPF))
            for s, ok in zip(segs, verdicts)]


def _all_common(segs: list[Segment], language: str | None) -> bool:
    """Whether every voting segment is in a script `language` is written in with spaces, and all its words
    are common words of `language` (rule 2 of the module docstring)."""
    from mlgrpo.langid.lexicon import in_common_words

    return bool(segs) and language is not None and all(
        s.group not in DENSE_GROUPS and _written_in(language, s.group) and in_common_words(s.text, language)
        for s in segs)


# English is left out of the neighbours whose words veto a segment: languages written in Latin letters borrow
# its words ("release notes", "Template") more than any dictionary lists them.
NOT_NEIGHBOURS = frozenset({"en"})


def _neighbours(group: str, pool: tuple[str, ...]) -> frozenset[str]:
    """The candidates whose words can veto a segment of script group `group` (rule 3)."""
    return _writers(group, pool) - NOT_NEIGHBOURS


def _neighbours_word(segment: Segment, language: str, pool: tuple[str, ...]) -> bool:
    """Whether `segment` holds a word `language` does not write and a neighbour commonly does (rule 3)."""
    from mlgrpo.langid.lexicon import foreign_word

    return segment.group not in DENSE_GROUPS and foreign_word(segment.text, language, _neighbours(segment.group, pool)) is not None


def _counts(found: dict | None, language: str, writers: frozenset[str], floor: float) -> bool:
    """Whether the row's language is at least `floor` times as probable as the likeliest candidate that writes
    the segment's script: a likelihood-ratio test against the best alternative, so that a word several
    languages write alike ("Juni": de, id, sv, sw) keeps counting, while a neighbour's spelling does not
    (None: the identifier cannot tell, which is no evidence against)."""
    if found is None:
        return True
    best = max((p for code, p in found.items() if code in writers), default=0.0)
    return best == 0.0 or found.get(language, 0.0) >= floor * best


_CACHE: dict[tuple, dict | None] = {}
_HAN: dict[str, dict] = {}
CACHE_SIZE = 100_000  # segments remembered across calls (the same answers recur step after step)


def clear_caches() -> None:
    """Forget every segment judged so far (benchmarks time a new checkpoint's outputs this way)."""
    _CACHE.clear()
    _HAN.clear()


def _han_cached(texts: tuple[str, ...]) -> dict[str, dict]:
    """Han text without kana between Chinese and Japanese alone (`mlgrpo.langid.combined.chinese_or_japanese`), cached."""
    missing = tuple(t for t in texts if t not in _HAN)
    if missing:
        from mlgrpo.langid.combined import chinese_or_japanese

        if len(_HAN) + len(missing) > CACHE_SIZE:
            _HAN.clear()
        _HAN.update((text, dict(scores)) for text, scores in zip(missing, chinese_or_japanese(missing)))
    return {t: _HAN[t] for t in texts}


def _probabilities_cached(texts: tuple[str, ...], pool, backend: str) -> dict[str, dict | None]:
    """`_probabilities_many` for each text, the ones seen before from the cache, the others in one batch."""
    found = {t: _CACHE[t, pool, backend] for t in texts if (t, pool, backend) in _CACHE}
    missing = tuple(t for t in texts if t not in found)
    if missing:
        if len(_CACHE) + len(missing) > CACHE_SIZE:
            _CACHE.clear()
        for text, probabilities in zip(missing, _probabilities_many(missing, pool, backend)):
            found[text] = _CACHE[text, pool, backend] = probabilities
    return found
