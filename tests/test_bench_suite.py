"""bench.bench_suite: which modules the fast tier leaves unrun, and README's one-sentence block."""

from __future__ import annotations

import json

from bench.bench_suite import readme_line, uncovered


def test_a_module_whose_functions_never_ran_is_listed(tmp_path):
    report = tmp_path / "coverage.json"
    report.write_text(json.dumps({"files": {
        "mlgrpo/ran.py": {"functions": {"": {"summary": {"covered_lines": 3}}, "f": {"summary": {"covered_lines": 2}}}},
        "mlgrpo/imported_only.py": {"functions": {"": {"summary": {"covered_lines": 5}},
                                                  "g": {"summary": {"covered_lines": 0}}}},
        "mlgrpo/constants.py": {"functions": {"": {"summary": {"covered_lines": 4}}}},  # nothing but a top level
    }}), encoding="utf-8")
    assert uncovered(report) == ["mlgrpo/imported_only.py"]


def test_readme_block_is_replaced_in_place(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- begin:suite -->\nold\n<!-- end:suite -->\nafter\n", encoding="utf-8")
    rows = [["fast tier", "python -m pytest -m \"not slow\"", "2 min 10 s", "3 min 00 s", "900 passed in 130s", ""]]
    readme_line(rows, [], readme)
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("before\n<!-- begin:suite -->\nMeasured by `python -m bench.bench_suite` (")
    assert "fast tier 2 min 10 s (goal 3 min 00 s): 900 passed in 130s; every mlgrpo module runs" in text
    assert text.endswith("<!-- end:suite -->\nafter\n") and "old" not in text
