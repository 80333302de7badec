"""What must happen to a text before any backend sees it, and how it splits into parts.

`screen` says whether a language can be told at all (letters, not garbled) and returns the text a
backend can take: NFC, no lone surrogates (lingua and fastText crash on them), no U+FFFD.
`parts` splits a text at sentence ends and at changes of writing system, so that the identifier can
see text that mixes languages. Pure functions; knows nothing about models, files or the CLI.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from mlgrpo.langid.script import DENSE_SCRIPTS, DENSE_WEIGHT, only_latin, script_of
from mlgrpo.text import is_legacy_mojibake, is_mojibake, normalize, scrub_surrogates

_LETTER = re.compile(r"[^\W\d_]")
_REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
# A sentence ends at . ! ? ; (or their CJK forms, which need no space after them) or a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?;…])\s+|(?<=[。！？；])|[\r\n]+")
_ENDS = re.compile(r"[.!?;…。！？；\r\n]")  # what any sentence end holds: one scan in C finds most texts have none


def screen(text: str) -> str | None:
    """The text ready for a backend, or None when no language can be told from it.

    None for: no letters (empty, whitespace, digits, punctuation, emoji); mojibake, including a
    lossy decode (over 10% U+FFFD) and legacy 8-bit text read as Latin-1 ("ÖÐÎÄ").
    """
    if _SURROGATE.search(text):
        text = scrub_surrogates(text)
    if not unicodedata.is_normalized("NFC", text):
        text = normalize(text)
    if not _LETTER.search(text):
        return None
    # Mojibake needs characters outside ASCII: skip ftfy's check (~5 us) for the many ASCII texts.
    if not text.isascii() and (is_mojibake(text) or is_legacy_mojibake(text)):
        return None
    if _REPLACEMENT in text:  # a few stray ones say nothing about the language
        text = text.replace(_REPLACEMENT, " ")
    return text.strip()


def letter_weight(text: str) -> int:
    """Letters of `text`, a dense-script character counting as DENSE_WEIGHT."""
    letters = _LETTER.findall(text)
    if only_latin(text):
        return len(letters)
    return sum(n * DENSE_WEIGHT if script_of(ch) in DENSE_SCRIPTS else n for ch, n in Counter(letters).items())


def _script_group(ch: str) -> str:
    # Japanese and Korean mix Han with kana or Hangul within a word: one group, not a switch.
    script = script_of(ch)
    return "CJK" if script in DENSE_SCRIPTS else script


def _split_scripts(sentence: str) -> list[str]:
    """Split where the writing system of the letters changes; other characters join the run."""
    if len({_script_group(ch) for ch in set(_LETTER.findall(sentence))}) < 2:
        return [s for s in (sentence.strip(),) if s]  # one writing system: one run
    runs: list[list[str]] = [[]]
    group = None
    for ch in sentence:
        if _LETTER.match(ch):
            current = _script_group(ch)
            if group is not None and current != group:
                runs.append([])
            group = current
        runs[-1].append(ch)
    return [s for s in ("".join(run).strip() for run in runs) if s]


def sentence_break(text: str) -> bool:
    """True when `text` has more than one sentence (or line)."""
    return _ENDS.search(text) is not None and _SENTENCE_END.search(text) is not None


def parts(text: str, min_weight: int) -> list[tuple[str, int]]:
    """The sentences and single-script runs of `text` that can be identified alone, weighed.

    A part needs `min_weight` letters (see `letter_weight`) and, unless it is in a dense script
    (Han, kana, Hangul), two words.

    >>> parts("Good morning, how are you? Доброе утро, как дела?", 12)
    [('Good morning, how are you?', 20), ('Доброе утро, как дела?', 17)]
    >>> parts("Το input πρέπει να είναι έγκυρο PostgreSQL", 12)
    [('πρέπει να είναι έγκυρο', 19)]
    """
    found = []
    for sentence in _SENTENCE_END.split(text):
        for run in _split_scripts(sentence):
            weight = letter_weight(run)
            if weight >= min_weight and (len(run.split()) >= 2 or _dense(run)):
                found.append((run, weight))
    return found


def _dense(run: str) -> bool:
    letter = _LETTER.search(run)
    return letter is not None and script_of(letter.group()) in DENSE_SCRIPTS
