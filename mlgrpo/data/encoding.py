"""Bytes to text: which codec a file is in, and decoding it without losing track of bad bytes.

Order of evidence: an encoding the user names; a byte-order mark; strict UTF-8 (valid UTF-8 is
almost never an accident for non-ASCII text); otherwise every likely codec decodes a sample and
mlgrpo.data.plausibility picks the decoding that reads most like real text in some language.
charset-normalizer adds its own guesses to the candidates; alone it was wrong for short Latin,
Greek and Hebrew files (../shared/research and tests/data/test_encoding.py).

Bytes that the chosen codec cannot decode become UNDECODABLE (a lone surrogate, which no strict
decode can produce), so that readers can report the row they fall in and keep the rest.
Knows nothing about file formats or records.
"""

from __future__ import annotations

import codecs
import difflib
import encodings.aliases
import math
import re
import unicodedata
from dataclasses import dataclass

from mlgrpo.data.plausibility import character_log_likelihood, log_likelihood, odd_word_cost
from mlgrpo.errors import DataError, UserError

UNDECODABLE = "\udcff"
_ERRORS = "mlgrpo.undecodable"
codecs.register_error(_ERRORS, lambda error: (UNDECODABLE, error.end))

# BOMs, longest first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_BOM_NAMES = {"utf-32": "UTF-32", "utf-8-sig": "UTF-8", "utf-16": "UTF-16"}
# Candidates in order of preference (the first wins a tie: cp1252 and latin-1 read most bytes the
# same). Supersets stand for their base: gb18030 for GBK/GB2312, cp932 for Shift-JIS, cp949 for
# EUC-KR, cp874 for TIS-620, cp1252 for ISO-8859-1.
COMMON_CODECS = (
    "utf-8", "cp1252", "cp1250", "cp1251", "gb18030", "big5", "cp932", "euc_jp", "cp949",
    "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "iso8859_2", "iso8859_5", "iso8859_7",
    "iso8859_8", "iso8859_9", "iso8859_15", "cp874", "koi8_r", "koi8_u",
)
# Rarely met today: they must read clearly better than a common codec to win (prior 1/1000).
RARE_CODECS = (
    "latin_1", "tis_620", "cp1258", "iso8859_3", "iso8859_4", "iso8859_6", "iso8859_10",
    "iso8859_13", "iso8859_16", "cp950", "big5hkscs", "euc_jis_2004", "mac_roman", "cp437",
    "cp850", "cp852", "cp866",
)
_RARE_PRIOR = math.log(1e-3)
_SAMPLE_BYTES = 16_384
_HIGH_BYTE = re.compile(rb"[\x80-\xff]")
_MAX_CONTROL_SHARE = 0.1  # more control characters than this: not a text file


@dataclass(frozen=True)
class Decoded:
    text: str  # the whole input; undecodable byte runs are UNDECODABLE
    encoding: str  # Python's name of the codec used ("utf-8", "gb18030", "cp1252", ...)
    method: str  # "given", "bom", "utf-8" (strictly valid) or "detected"
    undecodable: int  # byte runs the codec could not decode
    runner_up: str | None = None  # detected: the best codec that gives a different text
    margin: float = math.inf  # detected: log-likelihood lead over the runner-up, in nats


def resolve_encoding(name: str) -> str:
    """Python's codec name for `name` ("GBK" -> "gbk", "latin1" -> "iso8859-1").

    Raises UserError naming the closest valid names when `name` is not a text encoding.
    """
    try:
        info = codecs.lookup(name)
    except LookupError:
        info = None
    if info is not None and getattr(info, "_is_text_encoding", True):
        return info.name
    known = sorted(set(encodings.aliases.aliases) | set(encodings.aliases.aliases.values()))
    wanted = name.strip().lower().replace("-", "_")
    close = list(dict.fromkeys(codecs.lookup(c).name for c in difflib.get_close_matches(wanted, known, n=4, cutoff=0.6)))
    hint = f"did you mean {' or '.join(close[:2])}? " if close else ""
    reason = "is not a text encoding" if info is not None else "is not a known encoding"
    raise UserError(f"{name!r} {reason}: {hint}(any Python codec name works, e.g. utf-8, gb18030, cp1251, shift_jis)")


def bom_codec(data: bytes) -> str | None:
    """The codec a byte-order mark announces, or None."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return codec
    return None


def _decode(data: bytes, codec: str) -> str:
    text = data.decode(codec, _ERRORS)
    return text[1:] if text.startswith("\ufeff") else text  # a BOM is never content


def _after_ascii(data: bytes, start: int, cut: int) -> int:
    """`cut` moved back to just after an ASCII byte, so that no character is split (at most 64 back)."""
    for back in range(cut, max(start, cut - 64), -1):
        if data[back - 1] < 0x80:
            return back
    return cut


def sample_non_ascii(data: bytes, limit: int = _SAMPLE_BYTES) -> bytes:
    """Up to `limit` bytes of the lines that hold non-ASCII bytes: the only evidence between codecs."""
    if b"\x00" in data[:limit]:  # UTF-16/32 without a BOM: lines are not split on one byte
        return data[: limit - limit % 4]
    parts, size, pos = [], 0, 0
    while size < limit and (match := _HIGH_BYTE.search(data, pos)):
        start = data.rfind(b"\n", 0, match.start()) + 1
        end = data.find(b"\n", match.end())
        end = len(data) if end == -1 else end
        cut = min(end, start + limit - size)
        if cut < end:
            cut = _after_ascii(data, start, cut)
        parts.append(data[start:cut])
        size += cut - start
        pos = end + 1
    return b"\n".join(parts)


def _candidates(sample: bytes) -> dict[str, float]:
    """Codec -> log prior."""
    from charset_normalizer import from_bytes

    priors = {codecs.lookup(c).name: 0.0 for c in COMMON_CODECS}
    extra = list(RARE_CODECS) + [match.encoding for match in list(from_bytes(sample))[:3]]
    if b"\x00" in sample:
        extra += ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]
    for codec in extra:
        priors.setdefault(codecs.lookup(codec).name, _RARE_PRIOR)
    return priors


def detect_encoding(data: bytes) -> tuple[str, str | None, float]:
    """(codec, runner-up, margin): the codec whose decoding of a sample is most plausible.

    The runner-up is the best codec that decodes the sample to a different text; `margin` is at
    least how many nats more likely the winner is (small margins deserve a warning).
    """
    sample = sample_non_ascii(data)
    priors = _candidates(sample)
    decoded = {c: unicodedata.normalize("NFC", _decode(sample, c)) for c in priors}
    # Rank by the cheap character score (an upper bound), then add the word check in that order
    # until no remaining candidate can beat the best: exact, and most candidates stop early.
    upper = {c: character_log_likelihood(text) + priors[c] for c, text in decoded.items()}
    ranked = sorted(decoded, key=lambda c: -upper[c])  # stable: COMMON_CODECS order breaks ties
    scores: dict[str, float] = {}
    for codec in ranked:
        if scores and upper[codec] < max(scores.values()):
            break
        scores[codec] = upper[codec] + odd_word_cost(decoded[codec])
    best = max(scores, key=lambda c: (scores[c], -ranked.index(c)))
    others = [c for c in ranked if decoded[c] != decoded[best]]
    if not others:
        return best, None, math.inf
    runner_up = max(others, key=lambda c: (scores.get(c, upper[c]), -ranked.index(c)))
    return best, runner_up, scores[best] - scores.get(runner_up, upper[runner_up])


def repair_mojibake(text: str) -> str | None:
    """`text` as it was before a wrong decode, when that can be undone; None when it cannot.

    Two repairs are tried: ftfy, for UTF-8 read as a single-byte codec ("Ã©" for "é"), and, for
    legacy bytes read as Latin-1 or cp1252 ("ÖÐÎÄ" for "中文"), turning the text back into bytes
    and decoding them with the codec detect_encoding picks. The most plausible repair is kept, and
    only when it reads as more plausible text than the garbled one (ftfy alone turned GBK-as-Latin-1
    into another garble).
    """
    import ftfy  # local: ftfy builds tables on import; only garbled rows need it

    repairs = [ftfy.fix_encoding(text)]
    for wrong in ("cp1252", "latin-1"):
        try:
            raw = text.encode(wrong)
            repairs.append(raw.decode(detect_encoding(raw)[0]))
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
    scored = [(log_likelihood(r), r) for r in dict.fromkeys(repairs) if r != text]
    if not scored:
        return None
    score, best = max(scored, key=lambda sr: sr[0])
    return best if score > log_likelihood(text) else None


def _control_share(text: str, *, undecodable: bool = True) -> float:
    sample = text[:_SAMPLE_BYTES]
    controls = sum(1 for ch in sample if (ch < " " and ch not in "\t\n\r") or (undecodable and ch == UNDECODABLE))
    return controls / len(sample) if sample else 0.0


def _misaligned_break(data: bytes, codec: str) -> int | None:
    """Offset of the first UTF-16/32 line break that is out of step with the code units, or None.

    A byte lost or added in UTF-16, or the wrong byte order, moves every line break after it off the
    code-unit grid, where it decodes as some other character and the rows run together. In correct
    text a break's bytes land off the grid only where a U+0Axx or U+0Dxx character (Gurmukhi,
    Malayalam, Sinhala) precedes a U+xx00 one, which real text does not do.
    """
    if not codec.startswith(("utf-16", "utf-32")):
        return None
    width = 2 if codec.startswith("utf-16") else 4
    big = codec.endswith("be") or data.startswith((codecs.BOM_UTF16_BE, codecs.BOM_UTF32_BE))
    start = len(next((bom for bom, _ in _BOMS if data.startswith(bom)), b""))
    units = [re.escape(ch.encode(f"utf-{8 * width}-{'be' if big else 'le'}")) for ch in "\n\r"]
    offsets = (m.start() for unit in units for m in re.finditer(unit, data) if (m.start() - start) % width)
    return min(offsets, default=None)


def _check_chosen(data: bytes, text: str, codec: str, method: str, encoding: str | None, source: str) -> None:
    """Refuse the codec the user named, or the one a byte-order mark announced, where the bytes show it is wrong.

    Otherwise many rows would come out as one garbled row: UTF-8 read as UTF-16 keeps no line break,
    UTF-16 read in the wrong byte order (or after a lost byte) has its line breaks off the code-unit
    grid, and UTF-16 read as a one-byte codec is half NULs. Bad bytes here and there are not refused:
    they are their rows' problem, reported row by row.
    """
    mark = next((bom for bom, _ in _BOMS if data.startswith(bom)), b"")
    if method == "given":
        read = mark.decode(codec, "replace")
        if mark and read and not read.startswith("\ufeff"):  # "": a UTF-16/32 codec took the mark as its own
            raise DataError(f"{source}: starts with a {_BOM_NAMES[bom_codec(data)]} byte-order mark, which "
                            f"--encoding {encoding} reads as {read!r}; drop --encoding (the mark names the encoding)")
        how, fix = f"--encoding {encoding}", "drop --encoding to have the encoding detected, or name the right one"
    else:
        name = _BOM_NAMES[codec]
        how, fix = f"as its {name} byte-order mark says", f"if it is not {name}, remove the mark or re-save the file"
    codec = codecs.lookup(codec).name
    read_as = f"{source}: read as {codec} ({how})"
    if b"\x00" not in data and (b"\n" in data or b"\r" in data) and "\n" not in text and "\r" not in text:
        raise DataError(f"{read_as}, no line break is left and its rows would run together; {fix}")
    if (shifted := _misaligned_break(data, codec)) is not None:
        line = data[:shifted].decode(codec, "replace").count("\n") + 1
        raise DataError(f"{read_as}, its line breaks are out of step from line {line} on (the wrong byte order, "
                        f"or a byte missing or extra there); {fix}")
    if _control_share(text, undecodable=False) > _MAX_CONTROL_SHARE:
        raise DataError(f"{read_as}, it is mostly control characters, not text; {fix}")


def decode_bytes(data: bytes, encoding: str | None = None, *, source: str = "input") -> Decoded:
    """Decode a whole file: the user's `encoding`, else a BOM, else strict UTF-8, else detection.

    Never raises for bad bytes inside the text (they become UNDECODABLE, counted in `undecodable`);
    raises DataError when the bytes do not look like text in any candidate codec, or not in the codec
    named or announced by a byte-order mark.
    """
    if encoding is not None:
        codec, method = resolve_encoding(encoding), "given"
        if codec == "utf-8" and data.startswith(codecs.BOM_UTF8):
            codec = "utf-8-sig"
    elif (codec := bom_codec(data)) is not None:
        method = "bom"
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and "\x00" not in text:
            return Decoded(text, "utf-8", "utf-8", 0)
        codec, runner_up, margin = detect_encoding(data)
        text = _decode(data, codec)
        if _control_share(text) > _MAX_CONTROL_SHARE:
            raise DataError(
                f"{source}: does not look like text in any known encoding (binary file?); "
                "pass --encoding if you know it"
            )
        return Decoded(text, codecs.lookup(codec).name, "detected", text.count(UNDECODABLE), runner_up, margin)
    text = _decode(data, codec)
    _check_chosen(data, text, codec, method, encoding, source)
    return Decoded(text, codecs.lookup(codec).name, method, text.count(UNDECODABLE))
