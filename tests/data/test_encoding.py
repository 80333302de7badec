"""Decoding: BOMs, strict UTF-8 first, detection that recovers the exact text, bad bytes kept track of."""

from __future__ import annotations

import codecs

import pytest

from mlgrpo.data.encoding import (
    UNDECODABLE,
    bom_codec,
    decode_bytes,
    detect_encoding,
    repair_mojibake,
    resolve_encoding,
    sample_non_ascii,
)
from mlgrpo.data.readers import read_records
from mlgrpo.errors import DataError, UserError

# (CLDR locale, Django locale, codec): every legacy codec the issue names, in the languages that
# use it. Twelve rows each: six territory names and six UI sentences.
LEGACY_CASES = [
    ("zh", "zh_Hans", "gb18030"), ("zh", "zh_Hans", "gbk"), ("zh_Hant", "zh_Hant", "big5"),
    ("ja", "ja", "shift_jis"), ("ja", "ja", "euc_jp"), ("ko", "ko", "euc_kr"),
    ("pl", "pl", "cp1250"), ("cs", "cs", "cp1250"), ("ru", "ru", "cp1251"), ("uk", "uk", "cp1251"),
    ("fr", "fr", "cp1252"), ("de", "de", "cp1252"), ("es", "es", "cp1252"), ("el", "el", "cp1253"),
    ("tr", "tr", "cp1254"), ("he", "he", "cp1255"), ("ar", "ar", "cp1256"), ("fa", "fa", "cp1256"),
    ("lt", "lt", "cp1257"), ("de", "de", "iso8859_1"), ("pl", "pl", "iso8859_2"),
    ("ru", "ru", "iso8859_5"), ("el", "el", "iso8859_7"), ("he", "he", "iso8859_8"),
    ("tr", "tr", "iso8859_9"), ("et", "et", "iso8859_15"), ("th", "th", "tis_620"),
    ("ru", "ru", "koi8_r"), ("uk", "uk", "koi8_u"),
]


def _texts(real_text, cldr: str, django: str, codec: str) -> list[str]:
    return real_text.encodable(real_text.territories(cldr), codec, 6) + real_text.encodable(real_text.django(django), codec, 6)


def _rows(real_text, cldr: str, django: str, codec: str) -> str:
    return real_text.jsonl([{"prompt": text, "n": i} for i, text in enumerate(_texts(real_text, cldr, django, codec))])


@pytest.mark.parametrize("cldr,django,codec", LEGACY_CASES, ids=[f"{c[0]}-{c[2]}" for c in LEGACY_CASES])
def test_detection_recovers_the_exact_text(real_text, write, cldr, django, codec):
    texts = _texts(real_text, cldr, django, codec)
    original = real_text.jsonl([{"prompt": text, "n": i} for i, text in enumerate(texts)])
    path = write(f"{cldr}.jsonl", original, codec)
    decoded = decode_bytes(path.read_bytes())
    assert decoded.method == "detected"
    assert decoded.undecodable == 0
    # Not merely a codec that does not fail: the very characters that were written.
    assert decoded.text == original, f"read as {decoded.encoding}, runner-up {decoded.runner_up}"
    records, log, info = read_records(path)
    assert [r["prompt"] for r in records] == texts and info.encoding == decoded.encoding
    assert [p for p in log.problems if p.kind != "encoding_uncertain"] == []  # no row dropped, none called garbled


@pytest.mark.parametrize("codec,bom", [
    ("utf-8-sig", b""), ("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE),
    ("utf-32-le", codecs.BOM_UTF32_LE), ("utf-32-be", codecs.BOM_UTF32_BE),
])
def test_byte_order_marks_decide(real_text, codec, bom):
    original = real_text.jsonl([{"prompt": t} for t in (*real_text.territories("zh")[:3], *real_text.django("ar")[:3])])
    decoded = decode_bytes(bom + original.encode(codec))
    assert (decoded.method, decoded.text) == ("bom", original)  # the BOM itself is not content


def test_valid_utf8_is_taken_without_detection(real_text):
    original = real_text.jsonl([{"prompt": t} for t in real_text.django("ja")[:20]])
    decoded = decode_bytes(original.encode("utf-8"))
    assert (decoded.encoding, decoded.method, decoded.text, decoded.runner_up) == ("utf-8", "utf-8", original, None)


def test_one_bad_row_in_a_utf8_file_is_marked_and_the_rest_kept(real_text):
    rows = [real_text.jsonl([{"prompt": t}]).encode() for t in real_text.django("zh_Hans")[:9]]
    rows.insert(4, b'{"prompt": "\xff\xfe\xc3"}\n')
    decoded = decode_bytes(b"".join(rows))
    # Three bad runs: \xff, \xfe, and \xc3 (a lead byte cut short by the quote).
    assert (decoded.encoding, decoded.undecodable) == ("utf-8", 3)
    lines = decoded.text.split("\n")
    assert [i for i, line in enumerate(lines) if UNDECODABLE in line] == [4]
    assert [line + "\n" for line in lines[:4] + lines[5:-1]] == [r.decode() for r in rows[:4] + rows[5:]]


def test_one_bad_row_in_a_gbk_file_does_not_change_the_codec(real_text):
    good = _rows(real_text, "zh", "zh_Hans", "gbk").encode("gbk")
    decoded = decode_bytes(good + b'{"prompt": "\xff\xff"}\n')
    assert decoded.encoding == "gb18030"
    assert decoded.text.split("\n")[:12] == good.decode("gbk").split("\n")[:12]
    assert UNDECODABLE in decoded.text.split("\n")[12]


def test_given_encoding_wins_and_bad_bytes_are_marked(real_text):
    original = _rows(real_text, "ru", "ru", "cp1251")
    assert decode_bytes(original.encode("cp1251"), "windows-1251").text == original
    decoded = decode_bytes("Привет\n".encode("utf-8"), "ascii")
    assert (decoded.method, decoded.undecodable) == ("given", 12)


def test_given_utf8_skips_a_bom():
    assert decode_bytes(codecs.BOM_UTF8 + "日本".encode(), "utf-8").text == "日本"


def test_unknown_encoding_names_the_closest():
    assert resolve_encoding("Windows-1251") == "cp1251"
    with pytest.raises(UserError, match="did you mean shift_jis"):
        resolve_encoding("shift-jsi")
    with pytest.raises(UserError, match="'base64' is not a text encoding"):
        resolve_encoding("base64")


def test_binary_data_is_refused():
    with pytest.raises(DataError, match="binary file"):
        decode_bytes(bytes(range(256)) * 20, source="x.jsonl")


def test_bom_codec():
    assert bom_codec(codecs.BOM_UTF32_LE + b"a\x00\x00\x00") == "utf-32"  # not utf-16: longest BOM first
    assert bom_codec(codecs.BOM_UTF16_BE) == "utf-16"
    assert bom_codec(b"abc") is None


def test_sample_keeps_only_non_ascii_lines_and_whole_characters():
    data = b"ascii\n" + "中文\n".encode("gbk") + b"more ascii\n" + ("日本語 " * 100).encode()
    assert sample_non_ascii(data, limit=2000) == "中文".encode("gbk") + b"\n" + ("日本語 " * 100).encode()
    # 100 bytes: 4 for the first line, 96 left for the second (10 bytes per "日本語 "). Byte 96 is
    # inside 語, so the cut moves back to just after the 9th space.
    assert sample_non_ascii(data, limit=100) == "中文".encode("gbk") + b"\n" + ("日本語 " * 9).encode()


def test_detection_reports_a_runner_up_with_a_positive_margin(real_text):
    codec, runner_up, margin = detect_encoding(_rows(real_text, "fr", "fr", "cp1252").encode("cp1252"))
    assert codec == "cp1252" and runner_up is not None and margin > 0


def test_repair_mojibake_undoes_both_kinds():
    assert repair_mojibake("Ã©tÃ© Ã  Paris") == "été à Paris"  # UTF-8 read as cp1252 (ftfy)
    name = "中华人民共和国"
    assert repair_mojibake(name.encode("gbk").decode("latin-1")) == name  # GBK read as Latin-1
    assert repair_mojibake("plain text") is None


def test_text_without_the_badness_patterns_characters_is_never_mojibake():
    # mlgrpo.text.is_mojibake answers False without calling ftfy for ASCII text, and for text with none of the
    # characters ftfy's badness pattern is written with. That holds while each branch of the pattern requires a
    # character above U+007F, and every such character is among mlgrpo.text's set: read the pattern to check.
    try:
        import re._constants as C
        import re._parser as P
    except ImportError:  # Python 3.10
        import sre_constants as C
        import sre_parse as P

    from ftfy.badness import BADNESS_RE

    from mlgrpo.text import _mojibake_characters, is_mojibake

    def only_non_ascii(op, av) -> bool:
        if op is C.LITERAL:
            return av > 127
        if op is C.IN:
            return all(o is C.LITERAL and a > 127 or o is C.RANGE and a[0] > 127 for o, a in av)
        return False

    def needs_non_ascii(sequence) -> bool:
        return any(only_non_ascii(op, av)
                   or op is C.SUBPATTERN and needs_non_ascii(av[3])
                   or op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1 and needs_non_ascii(av[2])
                   or op is C.BRANCH and all(needs_non_ascii(b) for b in av[1])
                   for op, av in sequence)

    def characters(sequence, found: set) -> set:
        for op, av in sequence:
            if op is C.LITERAL:
                found.add(chr(av))
            elif op is C.IN:
                for o, a in av:
                    found.update([chr(a)] if o is C.LITERAL else map(chr, range(a[0], a[1] + 1)) if o is C.RANGE else ())
            elif op is C.SUBPATTERN:
                characters(av[3], found)
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
                characters(av[2], found)
            elif op is C.BRANCH:
                for branch in av[1]:
                    characters(branch, found)
        return found

    (op, (_, branches)), = list(P.parse(BADNESS_RE.pattern, BADNESS_RE.flags))
    assert op is C.BRANCH and len(branches) > 10 and all(needs_non_ascii(b) for b in branches)
    written_with = {ch for ch in characters([(op, (None, branches))], set()) if ord(ch) > 127}
    assert written_with and written_with <= _mojibake_characters()
    assert not is_mojibake("Ete a Paris") and not is_mojibake("删除 مرحبا नमस्ते")
    assert is_mojibake("Ã©tÃ© Ã  Paris") and is_mojibake("ä¸­æ–‡ text")


def test_is_mojibake_reads_ftfys_pattern_without_importing_ftfy():
    # ftfy's badness.py imports only the standard library: is_mojibake runs it alone (importing ftfy costs ~40 ms
    # more of `mlgrpo langid`'s start-up) and imports ftfy only to repair a text that matches. A fresh interpreter
    # shows both; the pattern it reads is the package's own.
    import subprocess
    import sys

    code = (
        "import sys, mlgrpo.text as t\n"
        "assert not t.is_mojibake('été à Paris, naïve café') and 'ftfy' not in sys.modules\n"
        "assert t.is_mojibake('Ã©tÃ© Ã  Paris') and 'ftfy' in sys.modules\n"
        "import ftfy.badness\n"
        "assert t._badness().BADNESS_RE.pattern == ftfy.badness.BADNESS_RE.pattern\n"
        "assert t._badness().MOJIBAKE_CATEGORIES == ftfy.badness.MOJIBAKE_CATEGORIES\n"
        "print(t._badness().__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "mlgrpo.text._ftfy_badness"
