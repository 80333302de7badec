"""prepare(): clean UTF-8 JSONL with a language on every row, written atomically, every row accounted for."""

from __future__ import annotations

import csv
import io
import json
import math
import os

import pytest

from mlgrpo.data.language import assign_languages, identifier_for, language_counts
from mlgrpo.data.prepare import check_writable, format_summary, prepare, to_json_line
from mlgrpo.errors import DataError, UserError

CANDIDATES = ["ru", "en", "zh", "ja", "de", "fr"]


def _read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_legacy_csv_to_language_tagged_utf8(write, tmp_path, real_text):
    # Sentences without %(name)s placeholders: language ID calls text that mixes scripts "und".
    ru = real_text.encodable([t for t in real_text.django("ru") if "%" not in t], "cp1251", 8)
    en = [t for t in real_text.english("ru") if "%" not in t and len(t) > 40][:3]
    table = io.StringIO()
    csv.writer(table, lineterminator="\n").writerows([["prompt", "language"], *([t, ""] for t in ru + en), ["Привет", "de"]])
    source = write("ui.csv", table.getvalue() + ",\na,b,c\n", "cp1251")
    out = tmp_path / "out.jsonl"
    summary = prepare(source, out, candidates=CANDIDATES, problems=tmp_path / "problems.jsonl")

    records = _read_jsonl(out)
    assert [r["prompt"] for r in records] == ru + en + ["Привет"]
    assert [r["language"] for r in records] == ["ru"] * 8 + ["en"] * 3 + ["de"]  # the file's code is trusted
    assert (summary.info.encoding, summary.written, summary.identified) == ("cp1251", 12, 11)
    assert summary.dropped() == {"empty": 1, "bad_csv": 1}
    assert summary.info.rows == 14 == summary.written + summary.log.dropped
    assert [p["row"] for p in _read_jsonl(tmp_path / "problems.jsonl")] == [14, 15]
    text = format_summary(summary)
    for expected in ("read      14 rows", "wrote     12 rows", "dropped   2: bad_csv 1, empty 1",
                     "languages ru 8 (66.7%), en 3 (25.0%), de 1 (8.3%) (1 given, 11 identified)", "cp1251"):
        assert expected in text


def test_unusable_input_leaves_out_untouched(write, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n", encoding="utf-8")
    source = write("bad.jsonl", '{"q": 1}\n\n')
    with pytest.raises(DataError, match=r"no usable rows \(2 read, 2 dropped\); first: .*bad.jsonl:1: missing_prompt"):
        prepare(source, out, candidates=CANDIDATES, problems=tmp_path / "p.jsonl")
    assert out.read_text(encoding="utf-8") == "previous\n"
    assert len(_read_jsonl(tmp_path / "p.jsonl")) == 2  # the problems are written even so
    assert sorted(os.listdir(tmp_path)) == ["bad.jsonl", "out.jsonl", "p.jsonl"]  # no temp file left


@pytest.mark.parametrize("name", ["empty.csv", "empty.jsonl", "empty.json", "empty.tsv"])
def test_empty_files_are_unusable(write, tmp_path, name):
    with pytest.raises(DataError, match=r"no usable rows \(0 read, 0 dropped\)"):
        prepare(write(name, b""), tmp_path / "out.jsonl", candidates=CANDIDATES)


def test_strict_failure_writes_nothing(write, tmp_path):
    source = write("s.jsonl", '{"prompt": "ok"}\n{"prompt": ""}\n')
    with pytest.raises(DataError, match="s.jsonl:2: empty"):
        prepare(source, tmp_path / "out.jsonl", candidates=CANDIDATES, strict=True)
    assert not (tmp_path / "out.jsonl").exists()


def test_outputs_that_cannot_be_written(write, tmp_path):
    source = write("in.jsonl", '{"prompt": "hello"}\n')
    with pytest.raises(UserError, match="folder .* does not exist"):
        prepare(source, tmp_path / "missing" / "out.jsonl")
    with pytest.raises(UserError, match="is not a folder"):
        prepare(source, source / "out.jsonl")
    with pytest.raises(UserError, match="is the input file"):
        prepare(source, source)
    with pytest.raises(UserError, match="both --out and --problems"):
        prepare(source, tmp_path / "o.jsonl", problems=tmp_path / "o.jsonl")
    with pytest.raises(UserError, match="it is a folder"):
        check_writable(tmp_path)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc, which even root cannot write")
def test_a_write_that_fails_is_one_user_error(write):
    with pytest.raises(UserError, match="cannot write /proc/self/out.jsonl"):
        prepare(write("in.jsonl", '{"prompt": "hello"}\n'), "/proc/self/out.jsonl", candidates=CANDIDATES)


def test_json_line_values():
    import datetime
    import decimal

    line = to_json_line({"id": "x:1", "when": datetime.date(2024, 5, 6), "price": decimal.Decimal("1.10"),
                         "score": math.nan, "nested": [math.inf, 1.5]})
    assert json.loads(line) == {"id": "x:1", "when": "2024-05-06", "price": "1.10", "score": None, "nested": [None, 1.5]}
    with pytest.raises(DataError, match="x:2: a bytes value cannot be written as JSON"):
        to_json_line({"id": "x:2", "image": b"\x89PNG"})


def test_output_keeps_unicode_and_permissions(write, tmp_path):
    source = write("zh.jsonl", '{"prompt": "中华人民共和国", "language": "zh_Hans"}\n')
    out = tmp_path / "o.jsonl"
    prepare(source, out, candidates=CANDIDATES)
    assert out.read_bytes() == '{"id": "zh.jsonl:1", "prompt": "中华人民共和国", "reference": null, "answers": [], "language": "zh", "task": "zh"}\n'.encode()
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600


def test_assign_languages_fills_only_missing(real_text):
    japanese = next(t for t in real_text.django("ja") if "%" not in t and "の" in t)
    records = [{"prompt": japanese, "language": None}, {"prompt": "Bonjour à tous", "language": "de"},
               {"prompt": "12345", "language": None}]
    filled, identified = assign_languages(records, identifier_for(CANDIDATES))
    assert [r["language"] for r in filled] == ["ja", "de", "und"] and identified == 2
    assert records[0]["language"] is None  # the input is not changed
    assert language_counts(filled) == [("de", 1), ("ja", 1), ("und", 1)]


def test_bad_candidates_fail_before_reading(tmp_path):
    with pytest.raises(UserError, match="unknown language code 'xx'"):
        prepare(tmp_path / "never-read.jsonl", tmp_path / "out.jsonl", candidates=["de", "xx"])
