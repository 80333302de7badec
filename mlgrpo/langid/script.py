"""What a text's writing system says about its language, without any model.

Hangul is Korean, kana is Japanese, Thai script is Thai: when the scripts of a text leave exactly
one candidate, no model is needed. Otherwise the scripts still narrow the candidates (Cyrillic text
is not French) before a model is asked. Built on `mlgrpo.text` script facts; knows nothing about
models or files.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

from mlgrpo.langid.codes import KNOWN_CODES
from mlgrpo.text import SCRIPT_RANGES, char_script

# ISO 639-1 languages written in each script of mlgrpo.text (among KNOWN_CODES). Latin is the rest.
_NON_LATIN = {
    "Greek": "el",
    "Cyrillic": "ru uk bg be mk sr kk ky mn tg tt ba cv ce os kv av uz",
    "Armenian": "hy",
    "Hebrew": "he yi",
    "Arabic": "ar fa ur ps sd ug ku",
    "Syriac": "",
    "Thaana": "dv",
    "Devanagari": "hi mr ne sa bh",
    "Bengali": "bn as",
    "Gurmukhi": "pa",
    "Gujarati": "gu",
    "Oriya": "or",
    "Tamil": "ta",
    "Telugu": "te",
    "Kannada": "kn",
    "Malayalam": "ml",
    "Sinhala": "si",
    "Thai": "th",
    "Lao": "lo",
    "Tibetan": "bo",
    "Myanmar": "my",
    "Georgian": "ka",
    "Ethiopic": "am",
    "Khmer": "km",
    "Mongolian": "mn",
    "Hangul": "ko",
    "Japanese": "ja",  # kana with or without Han (see `script_shares`)
    "Han": "zh ja",
    "Bopomofo": "zh",
}
# Written in Latin letters as well as in the script listed above.
_ALSO_LATIN = frozenset({"sr", "uz", "ku"})

SCRIPT_LANGUAGES: dict[str, frozenset[str]] = {
    script: frozenset(codes.split()) for script, codes in _NON_LATIN.items()
}
SCRIPT_LANGUAGES["Latin"] = (
    KNOWN_CODES - frozenset().union(*SCRIPT_LANGUAGES.values())
) | _ALSO_LATIN

# Letters that some languages of a shared script never write, as (letters, languages that do not).
# Facts of the alphabets: Urdu's retroflex letters and its final forms are not Persian or Arabic;
# Persian writes yeh and keheh as U+06CC/U+06A9 where Arabic writes U+064A/U+0643, and not teh marbuta;
# Ukrainian has no ы, э, ъ, ё and Russian no і, ї, є, ґ. Only the languages named are ever ruled out.
# Arabic yeh and kaf do not rule Persian out: Persian typed on an Arabic keyboard writes them (django CMS's
# Persian catalogue, issue 28: 21 of 300 texts judged not Persian for that alone, 19 of them Persian to the model).
_LETTER_EXCLUSIONS = (
    ("ٹڈڑںےہھ", "ar fa"),
    ("یک", "ar"),
    ("ة", "fa"),
    ("ыэъёЫЭЪЁ", "uk"),
    ("іїєґІЇЄҐ", "ru"),
)
EXCLUDED_BY_LETTER: dict[str, frozenset[str]] = {
    letter: frozenset(codes.split()) for letters, codes in _LETTER_EXCLUSIONS for letter in letters
}
_EXCLUSION_LETTER = re.compile("[" + "".join(EXCLUDED_BY_LETTER) + "]")  # most texts have none: one search in C
_EXCLUSION_SCRIPTS = frozenset(char_script(letter) for letter in EXCLUDED_BY_LETTER)  # a text without them has none

# A language stays possible when it writes the scripts of at least this share of the letters: an
# embedded name or term in another script does not decide ("iPhone 的价格" stays Chinese), and a
# text half in Latin and half in Cyrillic letters keeps languages of both.
MIN_COVERAGE = 0.5

# One Han, kana or Hangul character carries about a word; a Latin or Cyrillic letter about a fifth
# of one. Weighting them keeps "iPhone 的价格" from counting as mostly Latin.
DENSE_SCRIPTS = frozenset({"Han", "Hiragana", "Katakana", "Hangul", "Bopomofo", "Japanese"})
DENSE_WEIGHT = 3
# char_script bisects a table per call; texts reuse a few thousand characters. A plain dict, not an
# lru_cache: its lookup is the inner loop of `script_shares` (a dict's get costs half a cached call).
_SCRIPT_OF: dict[str, str] = {}
_SCRIPT_CACHE_SIZE = 65536


def script_of(ch: str) -> str:
    """`mlgrpo.text.char_script`, remembered."""
    script = _SCRIPT_OF.get(ch)
    if script is None:
        if len(_SCRIPT_OF) >= _SCRIPT_CACHE_SIZE:
            _SCRIPT_OF.clear()
        script = _SCRIPT_OF[ch] = char_script(ch)
    return script


# Characters outside ASCII, Latin-1 (but µ, a Greek letter), Latin Extended-A/B, IPA, Latin Extended
# Additional and general punctuation: a text without any has only Latin letters.
_BEYOND_LATIN = re.compile("[^\x00-\xb4\xb6-\u02af\u1e00-\u1eff\u2000-\u206f]")
_LETTER = re.compile(r"[^\W\d_]")


def only_latin(text: str) -> bool:
    """Whether every letter of `text` is Latin (or it has none): decided in C, as most texts are."""
    return not _BEYOND_LATIN.search(text)


def script_shares(text: str) -> dict[str, float]:
    """Each script's share of the letters of `text`, dense scripts weighted by DENSE_WEIGHT.

    Kana and Han count together as "Japanese" when any kana is present, and Han with Hangul counts
    as Hangul (Korean writes Hanja among Hangul). Empty when the text has no letters.
    """
    if only_latin(text):  # Latin letters and punctuation only: most texts, decided in C
        return {"Latin": 1.0} if _LETTER.search(text) else {}
    first = _LETTER.search(text)
    script = script_of(first.group()) if first else "Common"
    if not _outside(script).search(text):  # every character of one script or common to all: most of the rest
        return {"Japanese" if script in ("Hiragana", "Katakana") else script: 1.0}
    counts: Counter = Counter()
    for ch, n in Counter(text).items():  # distinct characters only: most texts repeat many
        if (script := script_of(ch)) != "Common":
            counts[script] += n
    if counts.get("Hiragana") or counts.get("Katakana"):
        counts["Japanese"] = counts.pop("Hiragana", 0) + counts.pop("Katakana", 0) + counts.pop("Han", 0)
    elif counts.get("Hangul") and counts.get("Han"):
        counts["Hangul"] += counts.pop("Han")
    weights = {s: n * (DENSE_WEIGHT if s in DENSE_SCRIPTS else 1) for s, n in counts.items()}
    total = sum(weights.values())
    return {s: w / total for s, w in weights.items()} if total else {}


# Characters of blocks that texts of every script share (ASCII, Latin-1's and general punctuation, CJK symbols and
# punctuation, full-width forms) that `char_script` calls "Common".
_COMMON_BLOCKS = ((0x00, 0xBF), (0x2000, 0x206F), (0x3000, 0x303F), (0xFF00, 0xFF65))
_COMMON = "".join(chr(cp) for low, high in _COMMON_BLOCKS for cp in range(low, high + 1) if char_script(chr(cp)) == "Common")


@functools.cache
def _outside(script: str) -> re.Pattern:
    """A character neither of `script` (its ranges in mlgrpo.text) nor common to all (_COMMON): a text with none of
    them has one script's letters only, which `script_shares` then tells in C."""
    ranges = "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high, name in SCRIPT_RANGES if name == script)
    return re.compile(f"[^{re.escape(_COMMON)}{ranges}]") if ranges else re.compile(r"[\s\S]")  # Common, Other: any


@functools.lru_cache(maxsize=4096)
def writers(script: str, candidates: frozenset[str]) -> frozenset[str]:
    """The candidates written in `script`; all of them for a script mlgrpo.text does not name."""
    return SCRIPT_LANGUAGES.get(script, candidates) & candidates


def coverage(shares: dict[str, float], candidates: frozenset[str]) -> dict[str, float]:
    """Each candidate's share of the letters written in scripts it uses (those above zero)."""
    covered: dict[str, float] = {}
    for script, share in shares.items():
        for code in writers(script, candidates):
            covered[code] = covered.get(code, 0.0) + share
    return covered


def foreign_share(shares: dict[str, float], language: str) -> float:
    """The share of the letters in scripts that `language` is not written in."""
    return sum(share for script, share in shares.items() if language not in writers(script, frozenset({language})))


def allowed_languages(text: str, shares: dict[str, float], candidates: frozenset[str]) -> frozenset[str]:
    """The candidates that can write `text`: by its scripts (MIN_COVERAGE), then by its letters.

    A language that never writes a letter of the text is ruled out, unless that would rule out all.
    """
    if len(shares) == 1:  # most texts: no shares to add up
        allowed = writers(next(iter(shares)), candidates)
    else:
        allowed = frozenset(code for code, share in coverage(shares, candidates).items() if share >= MIN_COVERAGE)
    if _EXCLUSION_SCRIPTS.isdisjoint(shares) or not _EXCLUSION_LETTER.search(text):  # most texts: no such letter
        return allowed
    excluded = {code for letter in set(_EXCLUSION_LETTER.findall(text)) for code in EXCLUDED_BY_LETTER[letter]}
    return allowed - excluded or allowed


def script_scores(text: str, shares: dict[str, float], candidates: frozenset[str]) -> list[tuple[str, float]]:
    """The script verdict: one language with the share of letters in its scripts, or nothing.

    Decisive only when scripts and letters leave exactly one candidate; the confidence is its
    coverage (stray letters of other scripts lower it).
    """
    allowed = allowed_languages(text, shares, candidates)
    if len(allowed) != 1:
        return []
    (language,) = allowed
    return [(language, coverage(shares, allowed)[language])]
