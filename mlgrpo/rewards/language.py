"""Language consistency: the share of a completion written in the row's language.

DeepSeek-R1 (2025, section 2.3.4) rewards "the proportion of target language words in the CoT" to
stop language mixing. Words do not exist in every script, so here the unit is the script-bearing
character (letters; not digits, punctuation or spaces), and the decision is made per segment:

1. The completion is cut into segments: maximal runs whose letters share one script group (Han,
   Hiragana, Katakana and Bopomofo form one group, "CJK"), also cut at sentence ends (. ! ? 。 ！ ？
   । ॥ ؟ and newlines). Digits, spaces and punctuation join the segment they sit in.
2. A segment counts for the row's language when (fast path, no model) its group is one the language
   is written in and no other candidate language is written in that group (Greek for "el", Hangul for
   "ko", Thai for "th"), or it holds kana and the language is Japanese. It counts against when its
   group is not one the language is written in (Latin letters in a "zh" row).
3. Otherwise (Latin for "sw" or "de", Cyrillic for "ru" or "uk", Han for "zh" or "ja"), the language
   identifier's backend gives the probability of each candidate language for the segment; it counts
   unless the row's language gets less than `min_probability` (default 0.05). Only positive evidence
   of another language costs reward: many short texts are spelled the same in several languages
   ("十六" is Chinese and Japanese; research/data.md: 12% of short names), so asking for the *most*
   likely language would punish correct answers. Text the identifier cannot judge (no letters,
   garbled) counts for the row.
   Measured on the references of the four built-in suites (40 items x 21 languages): references
   score 0.943 on average (0.912 when the most likely language must be the row's), and another
   language's reference in the same script scores 0.148 (0.166); with a floor of 0.02: 0.956 / 0.236.
   What still fails is text the backend is sure of and wrong about: kanji-only Japanese ("十六" gets
   ja 0.035 against zh) and Swahili names spelled as in English ("Kenya").

reward = (letters in counting segments) / (all letters); None when the row's language is missing or
"und", or the completion has no letters. Knows nothing about trainers, advantages or MLflow.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.rewards.registry import register
from mlgrpo.rewards.texts import as_text, base_language, column
from mlgrpo.text import char_script, normalize

# Script group -> languages written in it, for the languages mlgrpo ships data for and their
# neighbours. A language missing here is still scored, always through the identifier.
SCRIPT_LANGUAGES: dict[str, tuple[str, ...]] = {
    "Latin": tuple("en de fr es pt it nl sv da no nb nn pl cs sk sl hr bs sr ro hu fi et lv lt tr az id ms vi sw "
                   "tl ca eu gl ga is sq af yo ha zu xh so uz mt cy lb".split()),
    "Cyrillic": tuple("ru uk bg sr mk be kk ky mn tg".split()),
    "Greek": ("el",), "Armenian": ("hy",), "Georgian": ("ka",), "Hebrew": ("he", "yi"),
    "Arabic": ("ar", "fa", "ur", "ps", "ug", "sd"), "Thaana": ("dv",),
    "Devanagari": ("hi", "mr", "ne", "sa"), "Bengali": ("bn", "as"), "Gurmukhi": ("pa",), "Gujarati": ("gu",),
    "Oriya": ("or",), "Tamil": ("ta",), "Telugu": ("te",), "Kannada": ("kn",), "Malayalam": ("ml",),
    "Sinhala": ("si",), "Thai": ("th",), "Lao": ("lo",), "Myanmar": ("my",), "Khmer": ("km",),
    "Tibetan": ("bo",), "Ethiopic": ("am", "ti"), "Hangul": ("ko",), "CJK": ("zh", "ja"),
}
LANGUAGE_GROUPS: dict[str, frozenset[str]] = {}
for _group, _langs in SCRIPT_LANGUAGES.items():
    for _lang in _langs:
        LANGUAGE_GROUPS[_lang] = LANGUAGE_GROUPS.get(_lang, frozenset()) | {_group}

_CJK = frozenset({"Han", "Hiragana", "Katakana", "Bopomofo"})
_KANA = frozenset({"Hiragana", "Katakana"})
_SENTENCE_ENDS = frozenset(".!?。！？।॥؟\n")


@dataclass(frozen=True)
class Segment:
    group: str  # script group of its letters
    text: str  # the segment as written, for the identifier
    letters: int  # script-bearing characters in it
    kana: bool  # holds Hiragana or Katakana (then it is Japanese)


def segments(text: str) -> list[Segment]:
    """Cut `text` into one-script-group segments, also at sentence ends (see the module docstring).

    >>> [(s.group, s.text, s.letters) for s in segments("我爱 Python。Γεια σου")]
    [('CJK', '我爱 ', 2), ('Latin', 'Python', 6), ('Greek', 'Γεια σου', 7)]
    """
    found: list[Segment] = []
    group, chars, letters, kana = None, [], 0, False
    for ch in normalize(text):
        script = char_script(ch)
        if script == "Common":
            if ch in _SENTENCE_ENDS and group is not None:
                found.append(Segment(group, "".join(chars), letters, kana))
                group, chars, letters, kana = None, [], 0, False
            elif group is not None:
                chars.append(ch)
            continue
        ch_group = "CJK" if script in _CJK else script
        if ch_group != group:
            if group is not None:
                found.append(Segment(group, "".join(chars), letters, kana))
            group, chars, letters, kana = ch_group, [], 0, False
        chars.append(ch)
        letters += 1
        kana = kana or script in _KANA
    if group is not None:
        found.append(Segment(group, "".join(chars), letters, kana))
    return found


def fast_verdict(segment: Segment, language: str, candidates: Sequence[str] | None) -> bool | None:
    """True/False when the script alone decides whether `segment` is in `language`; None when only a
    language identifier can (another candidate language shares the script)."""
    groups = LANGUAGE_GROUPS.get(language)
    if groups is None:
        return None
    if segment.group not in groups:
        return False
    if segment.group == "CJK" and segment.kana:
        return language == "ja"
    return None if _has_rivals(segment.group, language, None if candidates is None else tuple(candidates)) else True


@functools.lru_cache(maxsize=4096)
def _has_rivals(group: str, language: str, candidates: tuple[str, ...] | None) -> bool:
    """Whether another candidate language (any language mlgrpo knows, without candidates) is written in `group`."""
    pool = candidates if candidates is not None else SCRIPT_LANGUAGES[group]
    return any(lang != language and group in LANGUAGE_GROUPS.get(lang, ()) for lang in pool)


@functools.lru_cache(maxsize=4)
def _identifier(candidates: tuple[str, ...] | None, backend: str):
    from mlgrpo.langid import LanguageIdentifier  # local: loads language models only when a row needs them

    return LanguageIdentifier(candidates=list(candidates) if candidates else None, backend=backend)


def load_models(candidates: Sequence[str], backend: str = "default") -> None:
    """Load now the identifier models that scoring rows in `candidates` can ask for: those of the
    candidates that share a script with another candidate (a segment in a script only its row's language
    writes is decided without a model). Loading on first use would instead stall the first call (~3 s
    of CPU for 29 Latin-script languages with lingua)."""
    pool = tuple(candidates)
    needed = [lang for lang in pool if lang not in LANGUAGE_GROUPS
              or any(_has_rivals(group, lang, pool) for group in LANGUAGE_GROUPS[lang])]
    if needed:
        _identifier(pool, backend).load(needed)


@functools.lru_cache(maxsize=100_000)
def language_probabilities(text: str, candidates: tuple[str, ...] | None, backend: str) -> dict[str, float] | None:
    """The identifier backend's probability of each candidate language for `text`, or None when no
    language can be told from it (no letters, garbled text, or the backend cannot tell).

    Uses the langid backend contract (a screened `Sample` and the candidates in, probabilities out)
    rather than `identify()`, whose single best guess cannot say "this is also plausibly Japanese".
    """
    from mlgrpo.langid.registry import Sample
    from mlgrpo.langid.screen import screen

    identifier = _identifier(candidates, backend)
    clean = screen(text)
    if clean is None:
        return None
    return dict(identifier.backend.scores(Sample(clean), identifier.candidates)) or None


def _check_language(params: Mapping[str, Any]) -> None:
    candidates = params.get("candidates")
    if candidates is not None and (isinstance(candidates, str) or not all(isinstance(c, str) for c in candidates)):
        raise UserError(f"language_consistency: candidates must be a list of language codes, got {candidates!r}")
    floor = params.get("min_probability", 0.05)
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0.0 <= floor <= 1.0:
        raise UserError(f"language_consistency: min_probability must be between 0 and 1, got {floor!r}")
    _identifier(tuple(candidates) if candidates else None, params.get("backend", "default"))


@register("language_consistency", requires=("language",), check=_check_language)
def language_consistency(prompts: Sequence, completions: Sequence, *, language: Sequence | None = None,
                         candidates: Sequence[str] | None = None, backend: str = "default",
                         min_probability: float = 0.05, **_: Any) -> list[float | None]:
    """Share of the completion's letters in segments written in the row's language (module docstring).

    `candidates`: the languages that compete for a segment (the experiment's languages; each row's
    language must be one); None means every language the identifier knows. `min_probability`: the
    floor of step 3. Hand-worked, decided by script alone: "Γεια σου world" in an "el" row has 7
    Greek letters out of 12 -> 7/12 = 0.5833; "나는 Python을 좋아해" in a "ko" row has 6 Hangul
    letters out of 12 -> 0.5; "123" has no letters -> None.

    >>> [None if r is None else round(r, 4) for r in language_consistency(
    ...     ["", "", ""], ["Γεια σου world", "나는 Python을 좋아해", "123"], language=["el", "ko", "ko"])]
    [0.5833, 0.5, None]
    """
    pool = tuple(candidates) if candidates else None
    rows: list[tuple[str | None, list[Segment]]] = []
    for completion, row_language in zip(completions, column(language, len(completions))):
        lang = base_language(row_language)
        rows.append((lang, segments(as_text(completion)) if lang else []))

    verdicts = [[fast_verdict(s, lang, pool) for s in segs] for lang, segs in rows]
    pending = [(i, j) for i, row in enumerate(verdicts) for j, v in enumerate(row) if v is None]
    if pending:
        known = _identifier(pool, backend).candidates
        for i, j in pending:
            lang = rows[i][0]
            if lang not in known:
                raise ValueError(f"row language {lang!r} is not among the language identifier's candidates "
                                 f"({', '.join(sorted(known))}); add it to params.candidates")
            probabilities = language_probabilities(rows[i][1][j].text, pool, backend)
            verdicts[i][j] = probabilities is None or probabilities.get(lang, 0.0) >= min_probability

    rewards: list[float | None] = []
    for (lang, segs), row_verdicts in zip(rows, verdicts):
        total = sum(s.letters for s in segs)
        if lang is None or total == 0:
            rewards.append(None)
            continue
        rewards.append(sum(s.letters for s, ok in zip(segs, row_verdicts) if ok) / total)
    return rewards
