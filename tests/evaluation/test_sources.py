"""The data SPEC of a standalone evaluation: a built-in suite's eval split, or a file; nothing is lost silently."""

from __future__ import annotations

import json

import pytest

from mlgrpo.errors import UserError
from mlgrpo.evaluation.sources import load_eval_records


def test_suite_eval_split_per_language():
    records, notes = load_eval_records("suite:numbers", languages=["ja", "sw"], per_language=3)
    assert [r["language"] for r in records] == ["ja"] * 3 + ["sw"] * 3
    assert {r["split"] for r in records} == {"eval"} and notes == []
    every, _ = load_eval_records("suite:countries", per_language=2)
    assert len(every) == 2 * len({r["language"] for r in every}) > 20


@pytest.mark.parametrize("spec, message", [("suite:", "names no suite"), ("suite:numbrs", "did you mean 'numbers'")])
def test_bad_suite_specs(spec, message):
    with pytest.raises(UserError, match=message):
        load_eval_records(spec)


def test_a_file_with_a_bad_row_and_a_row_without_language(tmp_path):
    rows = [{"prompt": "Capital of Kenya?", "answers": ["Nairobi"], "language": "en"},
            {"prompt": "Mji mkuu wa Kenya ni upi?", "reference": "Nairobi"},
            {"prompt": "ケニアの首都は？", "answers": ["ナイロビ"], "language": "ja"}]
    path = tmp_path / "held_out.jsonl"
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    path.write_text("\n".join(lines[:2] + ["{not json"] + lines[2:]) + "\n", encoding="utf-8")
    records, notes = load_eval_records(str(path))
    assert [r["prompt"] for r in records] == [r["prompt"] for r in rows]
    assert any("1 of 4 rows could not be read" in n and "bad_json 1" in n for n in notes)
    assert "1 row(s) had no language; language ID gave one (or 'und')" in notes
    japanese, notes = load_eval_records(str(path), languages=["ja"], per_language=5)
    assert [r["language"] for r in japanese] == ["ja"]
    assert any("2 row(s) in other languages than ja are not evaluated" in n for n in notes)
    with pytest.raises(UserError, match="has no rows in ko"):
        load_eval_records(str(path), languages=["ja", "ko"])
    with pytest.raises(UserError, match="per_language must be"):
        load_eval_records(str(path), per_language=0)
