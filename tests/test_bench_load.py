"""The load benchmark (bench/bench_load.py) at a tiny size: 2,000 rows in 10 languages through prepare,
inspect and the three samplers, every row accounted for; and its overhead arithmetic on hand-made steps.
"""

from __future__ import annotations

import json
import random

import pytest

from bench.bench_load import (
    BROKEN,
    FIRST_DRAWS,
    LANGUAGES,
    SAMPLERS,
    dataset_lines,
    identified_accuracy,
    language_rows,
    language_sizes,
    overhead,
    paired_overhead,
    training_report,
    time_inspect,
    time_prepare,
    time_sampler,
)

ROWS, CODES = 2000, LANGUAGES[:10]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("load")
    lines, truth, unlabeled = dataset_lines(ROWS, CODES)
    data = folder / "load.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder, data, lines, truth, unlabeled


def test_sizes_are_zipf_shaped_and_sum_to_the_rows():
    sizes = language_sizes(99_950, LANGUAGES)
    assert sum(sizes.values()) == 99_950 and len(sizes) == 50
    counts = list(sizes.values())
    assert counts == sorted(counts, reverse=True) and counts[-1] >= 500


def test_rows_past_the_pool_are_distinct_pairs():
    rows = language_rows("te", 5000, random.Random(0))  # Telugu's pool holds about 2,000 texts
    prompts = [r["prompt"] for r in rows]
    assert len(set(prompts)) == 5000 and rows[-1]["task"] == "pairs"
    assert all(r["language"] == "te" for r in rows)


def test_dataset_has_the_rows_asked_for(dataset):
    _, _, lines, truth, unlabeled = dataset
    assert len(lines) == ROWS == len(truth)
    assert sum(t is None for t in truth) == len(BROKEN)
    assert {t for t in truth if t} == set(CODES)
    assert len(unlabeled) == round(0.1 * (ROWS - len(BROKEN)))
    assert all("language" not in json.loads(lines[i - 1]) for i in unlabeled)


def test_prepare_and_inspect_lose_no_row(dataset, reliability):
    folder, data, lines, truth, unlabeled = dataset
    out = folder / "prepared.jsonl"
    prep = time_prepare(data, out, list(CODES))
    assert prep["written"] + prep["dropped"] == len(lines)
    assert prep["dropped"] == len(BROKEN) and prep["identified"] == len(unlabeled)
    assert sum(1 for _ in out.open(encoding="utf-8")) == prep["written"]
    right, und, asked = identified_accuracy(out, truth, unlabeled)
    assert asked == len(unlabeled) and right > (asked - und) / 2
    for as_json in (False, True):
        report = time_inspect(data, list(CODES), as_json)
        assert report["read"] == len(lines) == report["usable"] + report["dropped"]
    reliability.record("load", f"{ROWS} rows in {len(CODES)} languages through prepare and inspect", "passed",
                       rows_in=len(lines), rows_lost=len(lines) - prep["written"] - prep["dropped"])


@pytest.mark.parametrize("name", SAMPLERS)
def test_samplers_draw_a_whole_epoch(dataset, name):
    labels = [t for t in dataset[3] if t]
    timing = time_sampler(labels, name)
    assert timing["indices"] == (len(labels) // 64) * 64 * 8
    assert FIRST_DRAWS <= timing["indices"]


def test_overhead_is_the_median_of_per_round_ratios():
    def arm(*steps):
        return {"step_s": list(steps)}

    # Round 1: 1.1 / 1.0 - 1 = 0.10; round 2: 2.0 / 2.0 - 1 = 0; round 3: 3.3 / 3.0 - 1 = 0.10 -> median 0.10.
    results = [[arm(1.0, 1.0, 0.9), arm(1.1)], [arm(2.0), arm(2.0)], [arm(3.0), arm(3.3, 3.3)]]
    assert overhead(results, 1, 0) == pytest.approx(0.10)


def test_training_report_attributes_the_tracked_step():
    def arm(step, **extra):
        return {"step_s": [step], "cpu_s_per_step": step, "consistency_ms": 0.0, "consistency_mean_ms": 0.0,
                "consistency_cpu_ms": 0.0, "peak_rss_mb": 100.0, "helper_peak_rss_mb": 50.0, **extra}

    tracked = {"log_ms": 1.0, "store_cpu_ms": 9.0, "keys": 180.0, "finish_s": 0.1}
    results = [[arm(0.30), arm(0.36, consistency_ms=50.0, consistency_cpu_ms=20.0),
                arm(0.40, consistency_ms=50.0, consistency_cpu_ms=20.0, **tracked)]] * 2
    table, summary = training_report(results)
    assert summary["wall"] == pytest.approx(0.40 / 0.30 - 1) and len(summary["rounds"]) == 2
    assert summary["mlflow"] == pytest.approx(10 / 400)  # (on_log 1 ms + store 9 ms) of a 400 ms step
    assert summary["consistency"] == pytest.approx(50 / 400)  # the training thread's wait
    assert summary["consistency_cpu"] == pytest.approx(20 / 400)  # the helper's CPU
    assert "| logging every step, TrackingCallback to SQLite | 400 |" in table


def test_paired_overhead_pairs_steps_by_index():
    base = {"step_s": [0.1, 0.2, 0.4]}
    tracked = {"step_s": [0.11, 0.22, 0.40]}  # +10%, +10%, +0% on the same three steps
    median, low, high, pairs = paired_overhead([[base, {}, tracked]] * 2, 2, 0)
    assert median == pytest.approx(0.10) and pairs == 6 and low == pytest.approx(0.0) and high == pytest.approx(0.10)
