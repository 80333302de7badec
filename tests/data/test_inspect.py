"""The inspect report: hand-worked statistics, and a report and card of a real file."""

from __future__ import annotations

import json

import pytest

from mlgrpo.data.inspect import inspect_source, length_stats, percentile, render_card, render_text, script_mix

CANDIDATES = ["ru", "en", "zh", "ja", "ar"]


def test_percentile_is_nearest_rank():
    values = [3, 1, 4, 1, 5, 9, 2, 6]
    ordered = sorted(values)  # 1 1 2 3 4 5 6 9
    assert percentile(ordered, 50) == 3  # rank ceil(0.5 * 8) = 4 -> 3
    assert percentile(ordered, 95) == 9  # rank ceil(7.6) = 8 -> 9
    assert percentile(ordered, 0) == 1  # rank at least 1


def test_length_stats_by_hand():
    # lengths 1, 2, 3, 4, 100: mean (1+2+3+4+100)/5 = 22, median 3, p95 rank ceil(4.75) = 5 -> 100
    assert length_stats(["a", "bb", "ccc", "東京都庁", "x" * 100]) == {"min": 1, "median": 3, "mean": 22.0, "p95": 100, "max": 100}
    assert length_stats(["ab", "abcd"])["median"] == 3.0  # even count: mean of the middle two
    assert length_stats([]) is None


def test_script_mix_by_hand():
    # "東京 Tokyo!" has Han 2, Latin 5; "とうきょう" Hiragana 5; spaces and "!" are not counted: 12 in all.
    assert script_mix(["東京 Tokyo!", "とうきょう"]) == [
        {"script": "Hiragana", "chars": 5, "share": round(5 / 12, 4)},
        {"script": "Latin", "chars": 5, "share": round(5 / 12, 4)},
        {"script": "Han", "chars": 2, "share": round(2 / 12, 4)},
    ]


def _sample(write, real_text):
    ar = [t for t in real_text.django("ar") if "%" not in t and len(t) > 15][:4]  # sentences, not ":"
    rows = [{"prompt": t} for t in ar] + [{"prompt": "中华人民共和国", "language": "zh-CN"}, {"prompt": ""}]
    return write("mix.jsonl", real_text.jsonl(rows) + "{oops\n"), ar


def test_report_of_a_real_file(write, real_text):
    path, ar = _sample(write, real_text)
    report = inspect_source(path, candidates=CANDIDATES)
    assert report["rows"] == {"read": 7, "usable": 5, "dropped": 2}
    assert report["languages"] == [{"language": "ar", "rows": 4, "share": 0.8}, {"language": "zh", "rows": 1, "share": 0.2}]
    assert report["languages_identified"] == 4
    scripts = {s["script"]: s["share"] for s in report["scripts"]}
    assert max(scripts, key=scripts.get) == "Arabic" and "Han" in scripts
    assert sum(scripts.values()) == pytest.approx(1.0, abs=1e-3)
    lengths = sorted([len(t) for t in ar] + [7])
    assert report["prompt_chars"]["min"] == lengths[0] and report["prompt_chars"]["max"] == lengths[-1]
    assert [(p["row"], p["kind"]) for p in report["problems"]] == [(6, "empty"), (7, "bad_json")]
    assert report["encoding"]["description"] == "utf-8 (utf-8)"
    json.dumps(report, ensure_ascii=False)  # the --json output is one JSON object

    text = render_text(report)
    assert "languages ar 4 (80.0%), zh 1 (20.0%) (4 identified)" in text
    assert f"{path}:7: bad_json (dropped): not valid JSON" in text


def test_card_has_facts_and_a_section_to_fill_in(write, real_text):
    path, _ = _sample(write, real_text)
    card = render_card(inspect_source(path, candidates=CANDIDATES))
    assert card.startswith(f"# Data card: `{path}`")
    for expected in ("| `ar` | 4 | 80.0% |", "| Arabic |", "| empty | 1 | dropped |", "## Fill in: license and provenance",
                     "- License (and a link to its text):", "- Rows: 7 read, 5 usable, 2 dropped"):
        assert expected in card
