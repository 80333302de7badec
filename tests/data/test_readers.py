"""read_records: every format, every field rule, every row accounted for."""

from __future__ import annotations

import json

import pytest

from mlgrpo.data.readers import read_records
from mlgrpo.errors import DataError, UserError


def _accounted(records, log, info, rows_in_input: int) -> None:
    assert info.rows == rows_in_input == len(records) + log.dropped


def test_jsonl_record_fields_and_passthrough(write):
    path = write("qa.jsonl", json.dumps({
        "prompt": "Wie heißt die Hauptstadt?", "reference": "Berlin", "language": "de-DE",
        "difficulty": 3, "meta": {"source": "quiz", "tags": ["geo"]},
    }) + "\n")
    records, log, info = read_records(path)
    assert records == [{
        "id": "qa.jsonl:1", "prompt": "Wie heißt die Hauptstadt?", "reference": "Berlin",
        "answers": ["Berlin"], "language": "de", "task": "qa",
        "difficulty": 3, "meta": {"source": "quiz", "tags": ["geo"]},
    }]
    assert (info.format, info.encoding, info.encoding_method, log.problems) == ("jsonl", "utf-8", "utf-8", [])


def test_list_reference_and_answers_column_become_answers(write):
    rows = [
        {"prompt": "2+2?", "reference": ["4", "four", 4]},  # a number is its text; duplicates go
        {"prompt": "3+3?", "reference": "6", "answers": ["six", "6"]},  # reference first
        {"prompt": "capital?", "answers": ["Paris"]},  # no reference: the first answer is it
        {"prompt": "open question", "reference": None},
    ]
    records, _, _ = read_records(write("a.jsonl", "".join(json.dumps(r) + "\n" for r in rows)))
    assert [(r["reference"], r["answers"]) for r in records] == [
        ("4", ["4", "four"]), ("6", ["6", "six"]), ("Paris", ["Paris"]), (None, []),
    ]


def test_bad_rows_are_counted_with_their_line(write):
    text = "\n".join([
        '{"prompt": "ok 1"}',
        "",  # 2: blank line
        "{not json",  # 3
        "[1, 2]",  # 4: JSON, not an object
        '{"question": "where is the prompt?"}',  # 5
        '{"prompt": 42}',  # 6
        '{"prompt": "   "}',  # 7: empty prompt
        '{"prompt": "ok 8", "reference": {"a": 1}}',  # 8: a reference that is no answer
        '{"prompt": "ok 9"}',
    ]) + "\n"
    records, log, info = read_records(write("bad.jsonl", text))
    assert [r["id"] for r in records] == ["bad.jsonl:1", "bad.jsonl:9"]
    assert [(p.row, p.kind, p.dropped) for p in log.problems] == [
        (2, "empty", True), (3, "bad_json", True), (4, "not_object", True), (5, "missing_prompt", True),
        (6, "bad_prompt", True), (7, "empty", True), (8, "bad_reference", True),
    ]
    assert "'question'" in log.problems[3].message and "--prompt-field" in log.problems[3].message
    _accounted(records, log, info, 9)


def test_undecodable_row_is_dropped_with_its_line(write, real_text):
    good = [real_text.jsonl([{"prompt": t}]).encode() for t in real_text.django("ja")[:6]]
    path = write("mixed.jsonl", b"".join(good[:3]) + b'{"prompt": "\xff\xfe"}\n' + b"".join(good[3:]))
    records, log, info = read_records(path)
    assert [r["prompt"] for r in records] == list(real_text.django("ja")[:6])
    assert [(p.row, p.kind) for p in log.problems] == [(4, "undecodable")]
    assert "utf-8" in log.problems[0].message
    _accounted(records, log, info, 7)


def test_strict_mode_stops_at_the_first_dropped_row(write):
    path = write("s.jsonl", '{"prompt": "fine"}\n{"prompt": 1}\n{"bad"\n')
    with pytest.raises(DataError, match=r"s.jsonl:2: bad_prompt .*strict"):
        read_records(path, strict=True)


def test_legacy_csv_with_quotes_multiline_and_ragged_rows(write, real_text):
    names = real_text.encodable(real_text.territories("ru"), "cp1251", 3)
    text = (
        "question,answers,lang\n"
        f'"{names[0]}, столица?",Москва,ru\n'
        f'"{names[1]}\nвторая строка",,ru-RU\n'  # a quoted field over two lines: row starts on line 3
        "only,two\n"  # 5: ragged
        ",,\n"  # 6: empty
        f"{names[2]},\"[\"\"a\"\", \"\"b\"\"]\",xx\n"  # 7: unknown language code: kept, warned
    )
    records, log, info = read_records(write("ru.csv", text, "cp1251"), prompt_field="question", language_field="lang")
    assert info.encoding == "cp1251" and info.format == "csv"
    assert [(r["id"], r["prompt"], r["answers"], r["language"]) for r in records] == [
        ("ru.csv:2", f"{names[0]}, столица?", ["Москва"], "ru"),
        ("ru.csv:3", f"{names[1]}\nвторая строка", [], "ru"),
        ("ru.csv:7", names[2], ["a", "b"], None),
    ]
    assert [(p.row, p.kind, p.dropped) for p in log.problems] == [
        (5, "bad_csv", True), (6, "empty", True), (7, "bad_language", False),
    ]
    _accounted(records, log, info, 5)  # data rows: lines 2, 3-4, 5, 6, 7


def test_one_column_cannot_be_two_fields(write):
    with pytest.raises(UserError, match="'reference' is named for both reference and answers"):
        read_records(write("x.jsonl", '{"prompt": "a"}\n'), answers_field="reference")


def test_tsv_and_missing_prompt_column(write):
    records, _, info = read_records(write("t.tsv", "prompt\ttask\nhello\tgreet\n"))
    assert (info.format, records[0]["task"]) == ("tsv", "greet")
    with pytest.raises(UserError, match="no column 'prompt'.*did you mean --prompt-field prompts"):
        read_records(write("u.csv", "prompts,x\nhi,1\n"))
    with pytest.raises(DataError, match=r"d.csv:1: the header names 'x' more than once"):
        read_records(write("d.csv", "prompt,x,x\nhi,1,2\n"))


def test_json_array_object_and_json_lines(write):
    rows = [{"prompt": "a"}, "not an object", {"prompt": "c"}]
    records, log, info = read_records(write("arr.json", json.dumps(rows)))
    assert [r["id"] for r in records] == ["arr.json:1", "arr.json:3"] and log.problems[0].kind == "not_object"
    records, _, _ = read_records(write("obj.json", json.dumps({"version": 2, "data": rows[:1]})))
    assert records[0]["prompt"] == "a"
    records, _, info = read_records(write("lines.json", '{"prompt": "a"}\n{"prompt": "b"}\n'))
    assert (info.format, len(records)) == ("jsonl", 2)  # datasets writes JSON Lines as .json
    with pytest.raises(DataError, match=r"keys 'train', 'test'.*\{\"data\": \[\.\.\.\]\}"):
        read_records(write("two.json", json.dumps({"train": rows, "test": rows})))
    with pytest.raises(DataError, match="line 1 column 13"):
        read_records(write("broken.json", '[{"prompt": }]'))


def test_parquet(write, tmp_path):
    import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "prompt": ["東京は？", None], "reference": [["Tokyo", "東京"], None],
        "when": [datetime.date(2024, 1, 2), None],
    })
    pq.write_table(table, tmp_path / "d.parquet")
    records, log, info = read_records(tmp_path / "d.parquet", encoding="cp1252")
    assert (info.format, info.encoding) == ("parquet", None)
    assert log.problems.pop(0).kind == "encoding_ignored"  # said, not silently dropped
    assert records == [{"id": "d.parquet:1", "prompt": "東京は？", "reference": "Tokyo", "answers": ["Tokyo", "東京"],
                        "language": None, "task": "d", "when": datetime.date(2024, 1, 2)}]
    assert [(p.row, p.kind, p.message) for p in log.problems] == [(2, "missing_prompt", "the prompt 'prompt' is null")]


def test_datasets_objects_and_folders(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    ds = datasets.Dataset.from_list([{"prompt": "Hola", "language": "es"}, {"prompt": "Salut", "language": "fr"}])
    records, _, info = read_records(ds, name="greetings")
    assert info.format == "dataset" and [r["id"] for r in records] == ["greetings:1", "greetings:2"]

    both = datasets.DatasetDict({"train": ds, "test": ds.select([0])})
    with pytest.raises(UserError, match="choose one of train, test"):
        read_records(both)
    assert len(read_records(both, split="test")[0]) == 1

    both.save_to_disk(str(tmp_path / "saved"))
    records, _, info = read_records(tmp_path / "saved", split="train")
    assert (info.format, len(records)) == ("saved_dataset", 2)

    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "train.jsonl").write_text('{"prompt": "Ciao"}\n', encoding="utf-8")
    records, _, info = read_records(tmp_path / "files")
    assert (info.format, records[0]["prompt"]) == ("folder", "Ciao")


def test_hub_id_offline_is_a_clear_error(monkeypatch):
    import datasets
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    for hub_id in ("no-such-org/no-such-dataset", "hf:no-such-dataset"):
        with pytest.raises(UserError, match="could not load it with datasets.load_dataset.*HF_HUB_OFFLINE"):
            read_records(hub_id)


def test_missing_file_and_unknown_format(tmp_path, write, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    # Neither is taken for a hub id: a bare word, and a path under an existing folder.
    for missing in ("nope.jsonl", "train", "data/train"):
        with pytest.raises(UserError, match=f"{missing}: no such file"):
            read_records(missing)
    with pytest.raises(UserError, match=r"unknown format '.xlsx'; supported: .csv, .json, .jsonl"):
        read_records(write("book.xlsx", b"PK"))


def test_mojibake_rows_are_kept_with_a_warning_or_repaired(write):
    name = "中华人民共和国"
    rows = [{"prompt": "Ã©tÃ© Ã  Paris"}, {"prompt": name.encode("gbk").decode("latin-1")}, {"prompt": "fine"}]
    path = write("m.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    records, log, _ = read_records(path)
    assert [r["prompt"] for r in records] == [r["prompt"] for r in rows]  # nothing changed silently
    assert [(p.row, p.kind, p.dropped) for p in log.problems] == [(1, "mojibake", False), (2, "mojibake", False)]
    records, log, _ = read_records(path, fix_mojibake=True)
    assert [r["prompt"] for r in records] == ["été à Paris", name, "fine"]
    assert [p.kind for p in log.problems] == ["mojibake_fixed", "mojibake_fixed"]


def test_nfc_surrogates_and_renamed_columns(write):
    text = '{"prompt": "Cafe\\u0301 \\ud800", "id": "q-17", "note": "x\\udfff"}\n{"prompt": "b", "id": "q-18"}\n'
    records, log, _ = read_records(write("n.jsonl", text))
    assert records[0]["prompt"] == "Café \ufffd"  # NFC, and a lone surrogate cannot be written as UTF-8
    assert records[0]["note"] == "x\ufffd"
    assert [(r["id"], r["source_id"]) for r in records] == [("n.jsonl:1", "q-17"), ("n.jsonl:2", "q-18")]
    assert [(p.row, p.kind) for p in log.problems] == [(None, "renamed_column"), (1, "surrogate")]
    assert "prompt, 'note'" in log.problems[1].message


@pytest.mark.parametrize("given,code", [("zh-Hans", "zh"), ("zh_CN", "zh"), ("pt-BR", "pt"), ("EN", "en"), ("und", None)])
def test_language_codes_are_normalised(write, given, code):
    records, log, _ = read_records(write("l.jsonl", json.dumps({"prompt": "x", "language": given}) + "\n"))
    assert records[0]["language"] == code and not log.problems


def test_encoding_given_and_detected_are_reported(write, real_text):
    texts = real_text.encodable(real_text.django("el"), "iso8859_7", 12)
    path = write("el.jsonl", real_text.jsonl([{"prompt": t} for t in texts]), "iso8859_7")
    records, _, info = read_records(path)
    assert [r["prompt"] for r in records] == texts and info.encoding_method == "detected"
    assert info.describe_encoding().startswith(f"{info.encoding} (detected; next most likely ")
    _, _, info = read_records(path, encoding="iso-8859-7")
    assert info.describe_encoding() == "iso8859-7 (given)"


def test_a_close_call_between_codecs_is_a_warning(write):
    # One non-ASCII letter is little evidence: cp1252 wins, but by far less than UNCERTAIN_MARGIN.
    records, log, info = read_records(write("one.jsonl", '{"prompt": "Straße"}\n', "cp1252"))
    assert records[0]["prompt"] == "Straße" and info.margin < 5.0
    assert [(p.row, p.kind) for p in log.problems] == [(None, "encoding_uncertain")]
    assert f"pass --encoding {info.runner_up}" in log.problems[0].message
