"""EvalReport aggregates, flat names, JSON round trip, and collapse warnings: hand-worked."""

from __future__ import annotations

import json

import pytest

from mlgrpo.errors import UserError
from mlgrpo.evaluation import EvalReport, aggregate, collapse_warnings

DIRECTIONS = {"exact_match": "higher", "language_consistency": "higher", "code_switch": "lower",
              "length_chars": None}


def report(per_language: dict) -> EvalReport:
    return EvalReport.build(per_language, DIRECTIONS, samples=[], not_measured=["toxicity"], tokenizers={},
                            seconds=1.0)


START = {
    "en": {"exact_match": 0.8, "language_consistency": 1.0, "code_switch": 0.0, "length_chars": 10.0},
    "sw": {"exact_match": 0.4, "language_consistency": 0.9, "code_switch": 0.1, "length_chars": 20.0},
    "und": {"exact_match": 0.0, "length_chars": 99.0},  # reported, never aggregated
}


def test_aggregates_hand_worked():
    # exact_match: macro (0.8 + 0.4) / 2 = 0.6, worst 0.4 (sw), gap 0.4. code_switch (lower is better):
    # worst 0.1 (sw), gap 0.1. length: neither direction -> macro 15 and gap 10, no worst.
    agg, worst = aggregate(START, DIRECTIONS)
    assert agg["exact_match"] == pytest.approx({"macro": 0.6, "worst": 0.4, "gap": 0.4})
    assert agg["code_switch"] == pytest.approx({"macro": 0.05, "worst": 0.1, "gap": 0.1})
    assert agg["length_chars"] == pytest.approx({"macro": 15.0, "gap": 10.0})
    assert worst == {"exact_match": "sw", "language_consistency": "sw", "code_switch": "sw"}


def test_flat_names():
    flat = report(START).flat()
    assert flat["eval/exact_match/sw"] == 0.4 and flat["eval/exact_match/und"] == 0.0
    assert flat["eval/exact_match/macro"] == pytest.approx(0.6)
    assert flat["eval/code_switch/worst"] == 0.1
    assert "eval/length_chars/worst" not in flat
    assert set(report(START).flat("heldout")) == {k.replace("eval/", "heldout/", 1) for k in flat}


def test_json_round_trip():
    original = report(START)
    again = EvalReport.from_json(json.loads(json.dumps(original.to_json())))
    assert again == original
    with pytest.raises(UserError, match="step0.json is not an evaluation report .missing aggregates"):
        EvalReport.from_json({"per_language": {}, "samples": [], "not_measured": [], "tokenizers": {},
                              "seconds": 0}, "step0.json")


def test_collapse_when_consistency_or_accuracy_falls_more_than_the_threshold():
    now = {
        "en": {"exact_match": 0.75, "language_consistency": 1.0, "code_switch": 0.0, "length_chars": 10.0},
        # sw: consistency 0.9 -> 0.7 falls 0.2 > 0.1: collapse, although accuracy rose.
        "sw": {"exact_match": 0.5, "language_consistency": 0.7, "code_switch": 0.3, "length_chars": 20.0},
        "und": {"exact_match": 0.0, "length_chars": 99.0},
    }
    warnings = collapse_warnings(report(START), report(now), threshold=0.1)
    assert warnings["eval/collapse/sw"] == 1.0 and warnings["eval/collapse/en"] == 0.0  # en fell only 0.05
    assert "eval/collapse/und" not in warnings
    assert warnings["eval/change/language_consistency/sw"] == pytest.approx(-0.2)
    assert warnings["eval/change/exact_match/sw"] == pytest.approx(0.1)
    # macro exact match: 0.6 -> 0.625; worst language consistency 0.9 -> 0.7.
    assert warnings["eval/change/exact_match/macro"] == pytest.approx(0.025)
    assert warnings["eval/change/language_consistency/worst"] == pytest.approx(-0.2)
    assert collapse_warnings(report(START), report(now), threshold=0.25)["eval/collapse/sw"] == 0.0


def test_accuracy_collapse_and_a_language_new_since_the_start():
    now = dict(START, sw={**START["sw"], "exact_match": 0.1}, ja={"exact_match": 0.5})
    warnings = collapse_warnings(report(START), report(now))
    assert warnings["eval/collapse/sw"] == 1.0  # 0.4 -> 0.1
    assert warnings["eval/collapse/ja"] == 0.0 and "eval/change/exact_match/ja" not in warnings


@pytest.mark.parametrize("threshold", [-0.1, 1.5, "0.1", True])
def test_bad_threshold(threshold):
    with pytest.raises(UserError, match="collapse threshold"):
        collapse_warnings(report(START), report(START), threshold=threshold)
