"""The units language consistency counts: words, and characters of scripts written without spaces.

DeepSeek-R1 (2025, section 2.3.4) rewards "the proportion of target language words". A word is a fair
unit in scripts written with spaces (Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari, Hangul...). In
scripts written without them a character is the unit, weighed by how many English words one carries,
measured on Django's parallel catalogues (English words of the msgids / characters of the translations,
`tests/rewards/test_units.py` recomputes them): a Han character in Chinese 0.61, a character of
Japanese (kana and kanji together) 0.36, a Thai, Lao, Khmer or Myanmar character 0.28. So "GIMP 笔刷管道"
weighs its four Han characters as 2.4 words, not as four Latin letters' worth.

Neutral, never voting for or against a language (they are written alike in every language): numbers,
punctuation, URLs and e-mail addresses, printf and strftime placeholders ("%s", "%(name)s", "%b %Y"), code
(`snake_case`, `a.b()`, backquoted text, camelCase and
mixed letters and digits: "iPhone", "PostgreSQL", "IPv4"), acronyms (two or more capitals: "GIMP",
"PEM"), and, in a text whose language is not written in Latin letters, runs of capitalised Latin words
(names: "Python" in "我喜欢 Python", "Google Chrome"; "Hello world" has a lower-case word and votes). Neutral words vote after all when nothing else in the text does: an answer
"Brush Pipe" to a Chinese prompt is English, not undecidable.

Units are grouped into segments (runs of one script group within one sentence or clause); a language
judgement is made per segment (`language.py`). Pure functions; knows nothing about models.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from mlgrpo.text import char_script, normalize

# English words per character, measured on Django's parallel catalogues (module docstring).
DENSE_WEIGHTS = {"Han": 0.61, "Japanese": 0.36, "Thai": 0.28, "Lao": 0.28, "Khmer": 0.28, "Myanmar": 0.28}
_CJK = frozenset({"Han", "Hiragana", "Katakana", "Bopomofo"})
_KANA = frozenset({"Hiragana", "Katakana"})
# Scripts written without spaces, and their segment groups (Segment.group): their units are characters.
DENSE_SCRIPTS = _CJK | {"Thai", "Lao", "Khmer", "Myanmar"}
DENSE_GROUPS = (DENSE_SCRIPTS - _CJK) | {"CJK"}

def _mark_class() -> str:
    """A regex class of every combining mark (Unicode category M): vowel signs and nuktas belong to
    their word ("फ़ील्ड"), yet Python's \\w does not match them."""
    ranges, start, previous = [], None, None
    for code in range(0x300, 0x1E900):
        if unicodedata.category(chr(code)).startswith("M"):
            if start is None:
                start = code
            elif code != previous + 1:
                ranges.append((start, previous))
                start = code
            previous = code
    ranges.append((start, previous))
    return "".join(f"\\u{a:04x}-\\u{b:04x}" if b < 0x10000 else "" for a, b in ranges)


_MARK = _mark_class()
_TOKEN = re.compile(
    r"(?P<url>(?:https?|ftp)://\S+|www\.\S+|[\w.+-]+@[\w-]+\.[\w.-]+)"
    r"|(?P<code>%(?:\([^)]*\))?[-#0+_^]*\d*(?:\.\d+)?[A-Za-z]\b|`[^`]*`|[A-Za-z0-9]+(?:[._:/\\=][A-Za-z0-9]+)+(?:\(\))?|[A-Za-z0-9]+\(\)|[A-Za-z0-9]*_[A-Za-z0-9_]*)"
    rf"|(?P<word>[^\W\d_](?:[^\W\d_]|[{_MARK}]|['’][^\W\d_]|\d)*)"
    r"|(?P<sentence>[.!?;:。！？；：।॥؟،,，、()\[\]{}\"“”«»—–]|\n)"
)
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]|\d")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class Unit:
    text: str
    group: str  # script group: "CJK" for Han, kana and Bopomofo; else mlgrpo.text's script name
    weight: float  # in English words (1.0 for a word)
    neutral: bool  # a name, acronym or code-like word: votes only when nothing else does
    kana: bool = False  # holds Hiragana or Katakana (then it is Japanese)
    start: int = 0  # where it is in the normalised text
    end: int = 0


@dataclass(frozen=True)
class Segment:
    group: str
    text: str  # its units joined with spaces: what a language identifier reads
    weight: float
    kana: bool
    neutral: bool


def _group(script: str) -> str:
    return "CJK" if script in _CJK else script


def _script_runs(word: str) -> list[tuple[str, str]]:
    """The word cut where the script group of its letters changes ("Python을" -> Python, 을)."""
    runs: list[tuple[str, str]] = []
    for ch in word:
        script = char_script(ch)
        group = runs[-1][0] if runs and script in ("Common", "Inherited") else _group(script)
        if runs and runs[-1][0] == group:
            runs[-1] = (group, runs[-1][1] + ch)
        else:
            runs.append((group, ch))
    return runs


def _is_name_like(word: str) -> bool:
    """An acronym (two or more capitals, nothing lower case) or a camelCase / mixed-digit word."""
    letters = _LETTER.findall(word)
    upper = sum(ch.isupper() for ch in letters)
    return (upper >= 2 and upper == len(letters)) or (_CAMEL.search(word) is not None)


def units(text: str, latin_is_foreign: bool) -> list[list[Unit]]:
    """The text's units, per sentence or clause. `latin_is_foreign`: the row's language is not written in
    Latin letters, so capitalised Latin words are names (neutral).

    >>> [[(u.text, u.weight, u.neutral) for u in s] for s in units("GIMP 笔刷", latin_is_foreign=True)]
    [[('GIMP', 1.0, True), ('笔', 0.61, False), ('刷', 0.61, False)]]
    """
    sentences: list[list[Unit]] = [[]]
    text = normalize(text)
    japanese = any(char_script(ch) in _KANA for ch in text)  # then Han characters weigh as Japanese ones
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "sentence":
            if sentences[-1]:
                sentences.append([])
            continue
        if kind != "word":
            continue  # URLs and code are neutral and carry no letters that count
        at = match.start()
        for group, run in _script_runs(match.group()):
            sentences[-1].extend(_run_units(group, run, at, japanese))
            at += len(run)
    return [_mark_names(s) if latin_is_foreign else s for s in sentences if s]


def _mark_names(sentence: list[Unit]) -> list[Unit]:
    """In a row whose language is not written in Latin letters, a run of Latin words that are all
    capitalised is a name ("Python", "Google Chrome"): neutral. A run with a lower-case word is text in
    another language ("Hello world"), and votes."""
    out: list[Unit] = []
    i = 0
    while i < len(sentence):
        j = i
        while j < len(sentence) and sentence[j].group == "Latin":
            j += 1
        if j == i:
            out.append(sentence[i])
            i += 1
            continue
        run = sentence[i:j]
        if all(u.neutral or u.text[:1].isupper() for u in run):
            run = [Unit(u.text, u.group, u.weight, True, u.kana, u.start, u.end) for u in run]
        out.extend(run)
        i = j
    return out


def _run_units(group: str, run: str, at: int, japanese: bool) -> list[Unit]:
    if not _LETTER.search(run):
        return []
    if group == "CJK" or group in DENSE_WEIGHTS:
        weight = DENSE_WEIGHTS["Japanese"] if group == "CJK" and japanese else DENSE_WEIGHTS.get(group, DENSE_WEIGHTS["Han"])
        return [Unit(ch, group, weight, False, char_script(ch) in _KANA, at + i, at + i + 1)
                for i, ch in enumerate(run) if _LETTER.match(ch)]
    return [Unit(run, group, 1.0, _is_name_like(run), False, at, at + len(run))]


def segments(text: str, latin_is_foreign: bool = False) -> list[Segment]:
    """Runs of units of one script group within a sentence or clause; neutral units form their own
    segments (marked neutral), so that they can be left out, or counted when nothing else votes.

    >>> [(s.group, s.text, round(s.weight, 2), s.neutral) for s in segments("我爱 Python。Γεια σου", True)]
    [('CJK', '我爱', 1.22, False), ('Latin', 'Python', 1.0, True), ('Greek', 'Γεια σου', 2.0, False)]
    """
    found: list[Segment] = []
    # URLs and code blanked out of the spans the identifier reads (positions kept)
    normalised = _TOKEN.sub(lambda m: " " * len(m.group()) if m.lastgroup in ("url", "code") else m.group(), normalize(text))
    for sentence in units(text, latin_is_foreign):
        current: list[Unit] = []
        for unit in sentence:
            if current and (unit.group != current[0].group or unit.neutral != current[0].neutral):
                found.append(_segment(current, normalised))
                current = []
            current.append(unit)
        if current:
            found.append(_segment(current, normalised))
    return found


def _segment(run: list[Unit], normalised: str) -> Segment:
    """The units' span of the text as written (digits and spaces between them kept: "2009年6月21日" reads
    as a date, "年月日" would not), with neutral words of another kind cut out of it."""
    if run[0].neutral:
        text = " ".join(u.text for u in run)
    else:
        text = normalised[run[0].start : run[-1].end]
    return Segment(run[0].group, text, sum(u.weight for u in run), any(u.kana for u in run), run[0].neutral)
