"""Unicode text facts shared by the data layer, language ID and metrics.

Scripts of characters, normalisation, and signs of damaged text (mojibake, lone surrogates,
replacement characters). Pure functions over strings; knows nothing about files, models or MLflow.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections import Counter

# (first code point, last code point, script). Sorted, non-overlapping. Covers the scripts of the
# languages mlgrpo ships data for and their neighbours; anything else is "Other", and digits,
# punctuation, symbols and spaces are "Common" (they say nothing about the language).
SCRIPT_RANGES: list[tuple[int, int, str]] = sorted(
    [
        (0x0041, 0x005A, "Latin"), (0x0061, 0x007A, "Latin"), (0x00AA, 0x00AA, "Latin"),
        (0x00BA, 0x00BA, "Latin"), (0x00C0, 0x00D6, "Latin"), (0x00D8, 0x00F6, "Latin"),
        (0x00F8, 0x024F, "Latin"), (0x0250, 0x02AF, "Latin"), (0x1E00, 0x1EFF, "Latin"),
        (0x2C60, 0x2C7F, "Latin"), (0xA720, 0xA7FF, "Latin"), (0xFF21, 0xFF3A, "Latin"),
        (0xFF41, 0xFF5A, "Latin"),
        (0x0370, 0x03FF, "Greek"), (0x1F00, 0x1FFF, "Greek"),
        (0x0400, 0x052F, "Cyrillic"), (0x1C80, 0x1C8F, "Cyrillic"), (0x2DE0, 0x2DFF, "Cyrillic"),
        (0xA640, 0xA69F, "Cyrillic"),
        (0x0530, 0x058F, "Armenian"),
        (0x0590, 0x05FF, "Hebrew"), (0xFB1D, 0xFB4F, "Hebrew"),
        (0x0600, 0x06FF, "Arabic"), (0x0750, 0x077F, "Arabic"), (0x08A0, 0x08FF, "Arabic"),
        (0xFB50, 0xFDFF, "Arabic"), (0xFE70, 0xFEFF, "Arabic"),
        (0x0700, 0x074F, "Syriac"), (0x0780, 0x07BF, "Thaana"),
        (0x0900, 0x097F, "Devanagari"), (0xA8E0, 0xA8FF, "Devanagari"),
        (0x0980, 0x09FF, "Bengali"), (0x0A00, 0x0A7F, "Gurmukhi"), (0x0A80, 0x0AFF, "Gujarati"),
        (0x0B00, 0x0B7F, "Oriya"), (0x0B80, 0x0BFF, "Tamil"), (0x0C00, 0x0C7F, "Telugu"),
        (0x0C80, 0x0CFF, "Kannada"), (0x0D00, 0x0D7F, "Malayalam"), (0x0D80, 0x0DFF, "Sinhala"),
        (0x0E00, 0x0E7F, "Thai"), (0x0E80, 0x0EFF, "Lao"), (0x0F00, 0x0FFF, "Tibetan"),
        (0x1000, 0x109F, "Myanmar"), (0x10A0, 0x10FF, "Georgian"), (0x1C90, 0x1CBF, "Georgian"),
        (0x1100, 0x11FF, "Hangul"), (0x3130, 0x318F, "Hangul"), (0xA960, 0xA97F, "Hangul"),
        (0xAC00, 0xD7AF, "Hangul"), (0xD7B0, 0xD7FF, "Hangul"), (0xFFA0, 0xFFDC, "Hangul"),
        (0x1200, 0x139F, "Ethiopic"), (0x2D80, 0x2DDF, "Ethiopic"),
        (0x1780, 0x17FF, "Khmer"), (0x1800, 0x18AF, "Mongolian"),
        (0x3040, 0x309F, "Hiragana"), (0x30A0, 0x30FF, "Katakana"), (0x31F0, 0x31FF, "Katakana"),
        (0xFF66, 0xFF9F, "Katakana"),
        (0x2E80, 0x2FDF, "Han"), (0x3005, 0x3007, "Han"), (0x3021, 0x3029, "Han"),
        (0x3400, 0x4DBF, "Han"), (0x4E00, 0x9FFF, "Han"), (0xF900, 0xFAFF, "Han"),
        (0x20000, 0x3134F, "Han"),
        (0x3100, 0x312F, "Bopomofo"),
    ]
)
_STARTS = [r[0] for r in SCRIPT_RANGES]

# Characters that only appear when UTF-8 bytes were decoded as a single-byte codec (or the
# reverse): "Ã©" for "é", "â€™" for "’", "ä¸­" for "中". ftfy's badness score catches the rest.
_REPLACEMENT = "\ufffd"


@functools.lru_cache(maxsize=1 << 16)  # a text repeats its characters: a cache hit is ~8x cheaper than the lookup
def char_script(ch: str) -> str:
    """The script of one character: "Latin", "Han", ..., "Common" or "Other"."""
    cp = ord(ch)
    i = bisect.bisect_right(_STARTS, cp) - 1
    if i >= 0 and SCRIPT_RANGES[i][0] <= cp <= SCRIPT_RANGES[i][1]:
        return SCRIPT_RANGES[i][2]
    cat = unicodedata.category(ch)
    if cat[0] in "NPSZC" or cat in ("Lm", "Mn", "Mc", "Me"):
        return "Common"
    return "Other"


def script_counts(text: str) -> Counter:
    """How many characters of each script `text` has, without "Common" ones."""
    counts: Counter = Counter()
    for ch in text:
        script = char_script(ch)
        if script != "Common":
            counts[script] += 1
    return counts


def dominant_script(text: str) -> tuple[str | None, float]:
    """The most frequent script and its share of the script-bearing characters.

    Japanese kana and Han count together as "Japanese" when any kana is present, since Japanese
    text mixes them; Hangul with Han stays "Hangul". Returns (None, 0.0) for text with no letters.
    """
    counts = script_counts(text)
    total = sum(counts.values())
    if total == 0:
        return None, 0.0
    kana = counts.get("Hiragana", 0) + counts.get("Katakana", 0)
    if kana:
        jp = kana + counts.get("Han", 0)
        return "Japanese", jp / total
    script, n = counts.most_common(1)[0]
    return script, n / total


def has_lone_surrogate(text: str) -> bool:
    """True when `text` holds a UTF-16 surrogate code point (it cannot be encoded as UTF-8)."""
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def scrub_surrogates(text: str) -> str:
    """Replace lone surrogates with U+FFFD so that the text can be written as UTF-8."""
    if not has_lone_surrogate(text):
        return text
    return "".join(_REPLACEMENT if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)


def normalize(text: str) -> str:
    """NFC: one code point sequence per visible text, so that equal strings compare equal."""
    return unicodedata.normalize("NFC", text)


def replacement_share(text: str) -> float:
    """Share of U+FFFD characters: text that went through a lossy decode has many."""
    return text.count(_REPLACEMENT) / len(text) if text else 0.0


def is_mojibake(text: str) -> bool:
    """True when `text` looks decoded with the wrong codec ("ä¸­æ–‡" for "中文", "Ã©" for "é").

    Uses ftfy: if re-encoding and decoding the text fixes it into something different, the text was
    garbled. Lossy decodes (many U+FFFD) count too.
    """
    if not text or text.isascii():  # every branch of ftfy's badness pattern needs a non-ASCII character (tested)
        return False
    if replacement_share(text) > 0.1:
        return True
    if _mojibake_characters().isdisjoint(text):  # ... one of these: most Chinese, Arabic or Hindi text has none
        return False
    if not _badness().is_bad(text):
        return False
    import ftfy  # local: ftfy loads tables on import; most callers never need it

    fixed = ftfy.fix_encoding(text)
    return fixed != text


@functools.cache
def _badness():
    """ftfy's badness module, whose pattern (`is_bad`) is all that `is_mojibake` needs unless a text matches it.
    Importing ftfy builds all its tables first (~40 ms more, a twentieth of `mlgrpo langid` on 10,000 lines),
    and badness.py imports only the standard library: it is run alone from ftfy's folder. Where ftfy is imported
    already, or its badness module cannot run alone (a later ftfy), the package's own is used."""
    import sys

    if "ftfy.badness" not in sys.modules:
        import importlib.util
        from pathlib import Path

        try:
            folder = importlib.util.find_spec("ftfy").submodule_search_locations[0]
            spec = importlib.util.spec_from_file_location("mlgrpo.text._ftfy_badness", Path(folder) / "badness.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            if callable(getattr(module, "is_bad", None)) and isinstance(getattr(module, "MOJIBAKE_CATEGORIES", None), dict):
                return module
        except (ImportError, OSError, AttributeError, TypeError):  # not runnable alone: import the package
            pass
    import ftfy.badness

    return ftfy.badness


@functools.cache
def _mojibake_characters() -> frozenset[str]:
    """The characters ftfy's badness pattern is written with: its MOJIBAKE_CATEGORIES, ranges ("\x80-\x9f")
    expanded. A text with none of them cannot match it (tests/data/test_encoding.py reads the pattern to check)."""
    found: set[str] = set()
    for chars in _badness().MOJIBAKE_CATEGORIES.values():
        i = 0
        while i < len(chars):
            if i + 2 < len(chars) and chars[i + 1] == "-":
                found.update(map(chr, range(ord(chars[i]), ord(chars[i + 2]) + 1)))
                i += 3
            else:
                found.add(chars[i])
                i += 1
    return frozenset(found)


# Languages written without spaces between words: a space in an answer is style, not content.
_UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my"})
# Turkish and Azerbaijani pair dotted İ/i and dotless I/ı; str.casefold() would fold "I" to "i".
_DOTTED_I_LANGUAGES = frozenset({"tr", "az"})
# Arabic vowel marks (tashkeel), superscript alef and the tatweel: optional in writing, so
# "كَتَبَ" and "كتب" are the same answer. These code points occur only in Arabic-script text.
_ARABIC_OPTIONAL = frozenset([*(chr(cp) for cp in range(0x064B, 0x0660)), "\u0670", "\u0640"])


def normalize_answer(text: str, language: str | None = None) -> str:
    """The form in which two answers are compared: equal forms are the same answer.

    Steps, in order, and why:
    1. NFKC: full-width "１２Ａ" and half-width katakana become their usual forms, ligatures split,
       so answers typed on a CJK keyboard compare equal to the ASCII ones.
    2. Turkish and Azerbaijani (`language` "tr"/"az"): "I" -> "ı" and "İ" -> "i" first, because
       casefolding follows English and would merge two different Turkish letters.
    3. casefold: stronger than lower() ("Straße" == "STRASSE"); case never changes an answer here.
    4. Arabic tashkeel and tatweel are dropped: optional marks, absent from most references.
    5. Punctuation of every script (Unicode category P*: "，", "।", "«", "؟") becomes a space, so
       "twenty-one" and "twenty one" agree; symbols (S*: "$", "°") are kept, they carry meaning.
    6. Every Unicode decimal digit becomes ASCII ("٣" "३" "৩" -> "3"): numerals differ by script,
       numbers do not.
    7. Whitespace runs become one space, trimmed; for languages written without spaces (zh, ja, th,
       lo, km, my) spaces are removed, since they are not part of the answer there.

    >>> normalize_answer("  Twenty-One! ")
    'twenty one'
    >>> normalize_answer("１２３，٤٥٦")
    '123 456'
    >>> normalize_answer("北京 。", "zh")
    '北京'
    >>> normalize_answer("ISPARTA", "tr"), normalize_answer("ISPARTA")
    ('ısparta', 'isparta')
    """
    text = unicodedata.normalize("NFKC", text)
    if language in _DOTTED_I_LANGUAGES:
        text = text.replace("I", "ı").replace("İ", "i")
    text = unicodedata.normalize("NFKC", text.casefold())
    out = []
    for ch in text:
        if ch in _ARABIC_OPTIONAL:
            continue
        category = unicodedata.category(ch)
        if category[0] == "P":
            out.append(" ")
        elif category == "Nd":
            out.append(str(unicodedata.decimal(ch)))
        else:
            out.append(ch)
    words = "".join(out).split()
    # Removing a space can bring a combining mark next to a letter it composes with ("t" + U+0308).
    return unicodedata.normalize("NFC", ("" if language in _UNSPACED_LANGUAGES else " ").join(words))


# For is_legacy_mojibake: the Latin-1 block, its C1 controls, its letters, and any letter.
_LATIN1_HIGH = re.compile("[\x80-\xff]")
_C1_CONTROL = re.compile("[\x80-\x9f]")
_LATIN1_LETTER = re.compile("[\xc0-\xd6\xd8-\xf6\xf8-\xff]")
_ANY_LETTER = re.compile(r"[^\W\d_]")


def is_legacy_mojibake(text: str) -> bool:
    """True when `text` looks like a legacy 8-bit encoding read as Latin-1 or cp1252.

    GBK, cp1251 or Shift-JIS bytes read that way become runs of U+00C0-U+00FF letters ("ÖÐÎÄ" for
    "中文", "Ïðèâåò" for "Привет") or C1 control characters; ftfy cannot undo them, so
    `is_mojibake` misses them, and language ID labels them "vi" with confidence. No language writes
    most of its letters from that block (Icelandic "Þórður" has 3 of 6), and no text has C1 controls.
    """
    if not _LATIN1_HIGH.search(text):  # the common case, decided at C speed
        return False
    if _C1_CONTROL.search(text):
        return True
    high = len(_LATIN1_LETTER.findall(text))
    return high >= 4 and high >= 0.6 * len(_ANY_LETTER.findall(text))

