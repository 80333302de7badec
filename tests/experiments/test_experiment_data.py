"""A run's records: the same for every arm of a seed, held-out prompts the same for every run."""

from __future__ import annotations

import json

import pytest

from mlgrpo.data.suites import load_suite
from mlgrpo.experiments import load_experiment, load_run_data
from mlgrpo.experiments.data import take_per_language
from mlgrpo.experiments.fields import FieldError
from mlgrpo.experiments.sections import DataConfig

from .conftest import EXPERIMENTS


def test_every_arm_of_a_seed_sees_the_same_records_in_the_same_order():
    experiment = load_experiment(EXPERIMENTS / "imbalance.yaml")
    by_seed: dict[int, list] = {}
    for run in experiment.plan():
        train, held_out = load_run_data(run.data, run.seed, eval_per_language=run.evaluation.per_language)
        by_seed.setdefault(run.seed, []).append(([r["id"] for r in train], [r["id"] for r in held_out]))
    assert len(by_seed) == 3
    for runs in by_seed.values():
        assert len(runs) == 5 and all(ids == runs[0] for ids in runs)
    # The seed picks which 20 Swahili prompts are trained on; the held-out prompts are the same everywhere.
    sw = {seed: [i for i in runs[0][0] if "/sw/" in i] for seed, runs in by_seed.items()}
    assert len(sw[0]) == 20 and sw[0] != sw[1]
    assert by_seed[0][0][1] == by_seed[1][0][1] == by_seed[2][0][1]


def test_train_and_held_out_never_share_an_item():
    data = DataConfig(suite="numbers", languages=("en", "ja"), per_language=100)
    train, held_out = load_run_data(data, 3, eval_per_language=40)
    assert len(train) == 200 and len(held_out) == 80
    assert not {r["item"] for r in train} & {r["item"] for r in held_out}


def test_take_per_language_is_nested_and_keeps_order():
    rows = [{"id": f"r{i}", "language": "sw" if i % 2 else "en"} for i in range(40)]
    twenty = take_per_language(rows, ["sw"], 5, seed=1, field="per_language")
    ten = take_per_language(rows, ["sw"], 10, seed=1, field="per_language")
    assert sum(r["language"] == "sw" for r in twenty) == 5
    assert sum(r["language"] == "en" for r in twenty) == 20  # languages not listed keep every row
    assert {r["id"] for r in twenty} <= {r["id"] for r in ten}
    assert [r["id"] for r in ten] == [r["id"] for r in rows if r in ten]
    with pytest.raises(FieldError, match="asks for 30 rows in 'sw', but that split has 20"):
        take_per_language(rows, ["sw"], 30, seed=1, field="per_language")


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def test_user_file_split_by_row_hash_and_languages_found(tmp_path):
    rows = load_suite("countries", languages=["de", "sw"])
    write_rows(tmp_path / "c.jsonl", [{"question": r["prompt"], "reference": r["reference"],
                                       "language": r["language"]} for r in rows])
    data = DataConfig(file=str(tmp_path / "c.jsonl"), prompt_field="question", languages=("de", "sw"), per_language=25)
    train, held_out = load_run_data(data, 0)
    assert [sum(r["language"] == code for r in train) for code in ("de", "sw")] == [25, 25]
    assert held_out and not {r["id"] for r in train} & {r["id"] for r in held_out}
    assert load_run_data(data, 0) == (train, held_out)


def test_eval_file_and_a_language_without_rows(tmp_path):
    rows = load_suite("numbers", languages=["es"], per_language={"es": 30})
    write_rows(tmp_path / "train.jsonl", rows[:20])
    write_rows(tmp_path / "eval.jsonl", rows[20:])
    data = DataConfig(file=str(tmp_path / "train.jsonl"), eval_file=str(tmp_path / "eval.jsonl"), languages=("es",))
    train, held_out = load_run_data(data, 0)
    assert (len(train), len(held_out)) == (20, 10)
    missing = DataConfig(file=str(tmp_path / "train.jsonl"), languages=("es", "fr"))
    with pytest.raises(FieldError, match="no train rows in 'fr'"):
        load_run_data(missing, 0)
