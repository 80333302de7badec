"""`mlgrpo langid` through the CLI entry point, as a user runs it."""

from __future__ import annotations

import io
import json
import sys

import pytest

from mlgrpo.cli import main

ROWS = [
    {"id": 1, "text": "Dieses Feld ist zwingend erforderlich.", "keep": [1, 2]},
    {"id": 2, "text": "Ce champ est obligatoire."},
    {"id": 3, "text": "这个字段是必填项。"},
    {"id": 4, "text": "12345"},
]


def jsonl(rows) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def run(capsys, argv, stdin: bytes | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    code = main(["langid", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_file_in_jsonl_out_with_language_and_confidence_added(tmp_path, capsys):
    path = tmp_path / "rows.jsonl"
    path.write_text(jsonl(ROWS[:2]) + "\n" + jsonl(ROWS[2:]), encoding="utf-8")  # a blank line between
    code, out, err = run(capsys, [str(path), "--candidates", "de,fr,zh,ja"])
    assert (code, err) == (0, "")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["language"] for r in rows] == ["de", "fr", "zh", "und"]
    assert rows[0]["keep"] == [1, 2] and [r["id"] for r in rows] == [1, 2, 3, 4]
    assert rows[3]["confidence"] == 0.0 and all(0.5 <= r["confidence"] <= 1 for r in rows[:3])
    assert "这个字段是必填项" in out  # written as UTF-8, not as \\u escapes


def test_stdin_and_another_field_and_backend(capsys, monkeypatch):
    data = jsonl([{"prompt": "Доброе утро, как дела?"}, {"prompt": "Καλημέρα σε όλους"}]).encode("utf-8")
    code, out, err = run(capsys, ["-", "--field", "prompt", "--backend", "script"], data, monkeypatch)
    assert code == 0, err
    assert [json.loads(line)["language"] for line in out.splitlines()] == ["und", "el"]  # Cyrillic: many languages
    code, out, _ = run(capsys, ["--field", "prompt", "--candidates", "ru,el,en"], data, monkeypatch)
    assert [json.loads(line)["language"] for line in out.splitlines()] == ["ru", "el"]


def test_bad_json_names_the_line_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text(jsonl(ROWS[:1]) + '{"text": "oops"\n', encoding="utf-8")
    code, out, err = run(capsys, [str(path)])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"{path}:2: not JSON" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"prompt": "x"}', "<stdin>:1: no field 'text' (fields: 'prompt'); choose one with --field"),
        ('{"text": 3}', "<stdin>:1: field 'text' is 3, not a string"),
        ('["text"]', "<stdin>:1: a JSON list, not an object"),
    ],
)
def test_rows_without_a_string_field_are_refused(capsys, monkeypatch, line, message):
    code, out, err = run(capsys, [], (line + "\n").encode(), monkeypatch)
    assert code == 2 and out == "" and message in err


def test_bytes_that_are_not_utf8_are_refused(capsys, monkeypatch):
    data = jsonl(ROWS[:1]).encode() + '{"text": "caf\xe9"}\n'.encode("latin-1")
    code, out, err = run(capsys, [], data, monkeypatch)
    assert code == 2 and "<stdin>:2: not UTF-8 (byte 0xe9" in err


def test_unknown_candidate_or_backend_or_file(capsys, tmp_path):
    code, _, err = run(capsys, ["--candidates", "de,xx"])
    assert code == 2 and "unknown language code 'xx'" in err
    code, _, err = run(capsys, ["--backend", "lingva"])
    assert code == 2 and "did you mean 'lingua'" in err
    code, _, err = run(capsys, [str(tmp_path / "missing.jsonl")])
    assert code == 2 and "cannot read" in err and "missing.jsonl" in err


def test_lone_surrogate_escapes_pass_through(capsys, monkeypatch):
    data = b'{"text": "Das ist ein ganz normaler Satz \\ud800 auf Deutsch."}\n'
    code, out, err = run(capsys, ["--candidates", "de,en"], data, monkeypatch)
    assert code == 0, err
    assert '\\ud800' in out and json.loads(out)["language"] == "de"
