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


FAULTS = '''
def test_held(reliability):
    reliability.record("fault", "a fault that was survived", "survived")


def test_recorded_then_failed(reliability):
    reliability.record("fault", "a fault recorded before its assert", "survived")
    assert False, "the fault was not survived"


def test_failed_before_recording(reliability):
    assert False, "broke before recording"
    reliability.record("fault", "never written", "survived")
'''


def test_a_failing_test_shows_as_failed(tmp_path):
    # A real pytest run through bench.reliability's own runner, with the suite's fixture and result hook.
    from bench.reliability import read_log, run_tests

    (tmp_path / "test_faults.py").write_text(FAULTS, encoding="utf-8")
    log = tmp_path / "records.jsonl"
    code, summary, _ = run_tests(log, [str(tmp_path / "test_faults.py")], options=("-p", "tests.conftest"))
    assert code == 1 and summary.startswith("2 failed, 1 passed")
    records = read_log(log)
    outcomes = {r["test"].split("::")[-1]: (r["category"], r["outcome"]) for r in records}
    assert outcomes == {"test_held": ("fault", "survived"), "test_recorded_then_failed": ("fault", "failed"),
                        "test_failed_before_recording": ("failed before recording", "failed")}
    text = render(records, summary, 1.0, "")
    assert "| fault | 2 | 2 |  |  | 0 | 1 |" in text  # two checks recorded, one of them failed
    assert "| failed before recording | 1 | 0 |  |  | 0 | 1 |" in text
