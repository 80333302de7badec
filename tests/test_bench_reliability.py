"""reports/reliability.md's tables (bench/reliability.py) from hand-made records: totals per category,
rows lost summed, failed tests shown, never a claim without a record."""

from __future__ import annotations

from bench.reliability import CATEGORIES, TESTS, render


def test_totals_and_sections_from_records():
    records = [
        {"test": "t::a", "category": "fault", "what": "SIGKILL", "outcome": "survived", "tried": 1, "refused": 0,
         "rows_in": 0, "rows_lost": 0},
        {"test": "t::b", "category": "bad input: data file", "what": "random bytes", "outcome": "refused",
         "tried": 40, "refused": 12, "rows_in": 300, "rows_lost": 0},
        {"test": "t::c", "category": "bad input: data file", "what": "BOMs", "outcome": "passed", "tried": 10,
         "refused": 0, "rows_in": 50, "rows_lost": 0, "max_abs_param_difference": 0.0},
    ]
    text = render(records, "3 passed in 1.0s", 1.0, "")
    assert "| fault | 1 | 1 |  |  | 0 | 0 |" in text
    assert "| bad input: data file | 2 | 50 | 12 | 350 | 0 | 0 |" in text
    assert "## Bad input: data file" in text and "`t::b`" in text
    assert "| security | 0 | 0 |" in text  # nothing recorded: nothing claimed
    assert "| load |" not in text  # the load benchmark speaks for itself below
    assert "Not measured in this run" in text


def test_failed_tests_are_listed():
    text = render([], "1 failed, 2 passed in 3.0s\nFAILED tests/x.py::test_y - boom", 3.0, "load table")
    assert "Failed tests:" in text and "tests/x.py::test_y" in text and "load table" in text


def test_the_categories_match_the_fixture_and_the_test_files_exist():
    from pathlib import Path

    import tests.conftest as conftest  # noqa: F401  (the fixture's categories)

    root = Path(__file__).resolve().parent.parent
    assert CATEGORIES == conftest.Reliability.CATEGORIES
    assert [t for t in TESTS if not (root / t.split("::")[0]).exists()] == []
    named = [t.split("::") for t in TESTS if "::" in t]
    assert [t for t in named if f"def {t[1]}(" not in (root / t[0]).read_text(encoding="utf-8")] == []
