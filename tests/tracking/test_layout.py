"""A small comparison logged to a real `mlflow server`: experiment, parent, children, tags, params,
metric names and aggregates, artifacts (resolved YAML, data, plots, generation tables) and datasets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

import mlgrpo
from mlgrpo.data.suites import load_suite
from mlgrpo.tracking import (
    Tracker,
    generations_table,
    log_comparison_plots,
    log_language_plots,
    log_records,
    tracked_metrics,
)

from .conftest import QUICK

LANGS = ("en", "ja", "sw")
PNG = b"\x89PNG\r\n\x1a\n"
CARD = Path(mlgrpo.__file__).parents[1] / "data_cards" / "numbers.md"  # committed, generated from packages


def _reward(arm: str, step: int, lang: str) -> float:
    """A made-up learning curve: grpo climbs faster, sw lags behind."""
    rate = {"grpo": 0.1, "ppo": 0.05}[arm] * (0.5 if lang == "sw" else 1.0)
    return min(1.0, 0.2 + rate * step)


@pytest.fixture(scope="module")
def comparison(mlflow_server, tmp_path_factory):
    outbox = tmp_path_factory.mktemp("outbox")
    tracker = Tracker.open(mlflow_server.uri, "layout-quickstart", policy=QUICK, outbox_dir=outbox)
    config = {"name": "layout-quickstart", "languages": list(LANGS), "tracking": {"uri": "http://u:pw@h:1"},
              "arms": [{"name": "grpo"}, {"name": "ppo"}]}
    parent = tracker.start_parent("quickstart 1", {"languages": ",".join(LANGS), "config_hash": "c0ffee"}, config)
    records = load_suite("numbers", languages=list(LANGS), per_language={lang: 12 for lang in LANGS})
    children = {}
    for arm in ("grpo", "ppo"):
        identity = {"arm": arm, "seed": "0", "config_hash": "c0ffee"}
        child, state = tracker.child_run(parent, identity, f"{arm}-s0", {"algorithm": arm, "languages": "en,ja,sw"},
                                         {**config, "arm": {"name": arm, "lr": 2e-4}})
        assert state == "new"
        for step in range(1, 6):
            logs = {f"reward/{lang}": _reward(arm, step, lang) for lang in LANGS}
            logs |= {"reward": sum(logs.values()) / 3, "kl": 0.01 * step, "system/samples_per_sec": 40.0}
            child.log_metrics(tracked_metrics(logs, LANGS), step)
        child.log_metrics(tracked_metrics({f"exact_match/{lang}": 0.5 for lang in LANGS}, LANGS, split="eval"), 5)
        child.log_text("name: layout-quickstart\nlanguages: [en, ja, sw]\n", "config/resolved.yaml")
        log_records(child, records, "numbers-train", "train", card=CARD)
        child.log_table([{"language": r["language"], "prompt": r["prompt"], "completion": r["reference"]}
                         for r in records[:6]], generations_table("eval", 5))
        assert log_language_plots(child, ["train/reward/", "eval/nothing/"]) == {
            "train/reward/": "plots/languages/train_reward.png", "eval/nothing/": None}
        children[arm] = child
    log_comparison_plots(parent, {arm: c.run_id for arm, c in children.items()}, ["train/reward/"], LANGS)
    for child in children.values():
        child.finish()
    parent.finish()
    return tracker, parent, children


def test_experiment_parent_and_children(comparison):
    tracker, parent, children = comparison
    client = MlflowClient(tracker.uri)
    assert client.get_experiment_by_name("layout-quickstart").experiment_id == tracker.experiment_id
    runs = client.search_runs([tracker.experiment_id])
    assert len(runs) == 3
    for arm, child in children.items():
        run = client.get_run(child.run_id)
        tags = run.data.tags
        assert tags["mlflow.parentRunId"] == parent.run_id
        assert (tags["arm"], tags["seed"], tags["algorithm"], tags["languages"]) == (arm, "0", arm, "en,ja,sw")
        assert tags["config_hash"] == "c0ffee" and tags["mlgrpo.version"] and tags["mlgrpo.role"] == "child"
        assert tags["mlflow.source.git.commit"]  # the tests run inside the project's git checkout
        assert run.info.status == "FINISHED"
        params = run.data.params
        assert params["arm.name"] == arm and params["arm.lr"] == "0.0002" and params["arms.1.name"] == "ppo"
        assert params["tracking.uri"] == "http://u:***@h:1"
    assert client.get_run(parent.run_id).data.tags["mlgrpo.role"] == "parent"


def test_metric_names_steps_and_aggregates(comparison):
    tracker, _, children = comparison
    client = MlflowClient(tracker.uri)
    run = client.get_run(children["grpo"].run_id)
    assert set(run.data.metrics) == {
        *(f"train/reward/{x}" for x in (*LANGS, "macro", "worst", "all")), "train/kl", "system/samples_per_sec",
        *(f"eval/exact_match/{x}" for x in (*LANGS, "macro", "worst")),
    }
    history = client.get_metric_history(run.info.run_id, "train/reward/worst")
    # grpo at step 3: en = ja = 0.2 + 0.1 * 3 = 0.5, sw = 0.2 + 0.05 * 3 = 0.35 -> worst 0.35
    assert [m.step for m in history] == [1, 2, 3, 4, 5]
    assert dict((m.step, m.value) for m in history)[3] == pytest.approx(0.35)
    macro = dict((m.step, m.value) for m in client.get_metric_history(run.info.run_id, "train/reward/macro"))
    assert macro[3] == pytest.approx((0.5 + 0.5 + 0.35) / 3)


def test_artifacts_tables_plots_and_datasets(comparison, tmp_path):
    tracker, parent, children = comparison
    client = MlflowClient(tracker.uri)
    child = children["ppo"].run_id

    def read(run_id: str, path: str) -> bytes:
        with open(client.download_artifacts(run_id, path, str(tmp_path)), "rb") as handle:
            return handle.read()

    files = {a.path for folder in ("config", "data/numbers-train", "plots/languages", "eval/generations")
             for a in client.list_artifacts(child, folder)}
    assert files == {"config/resolved.yaml", "data/numbers-train/languages.json", "data/numbers-train/languages.png",
                     "data/numbers-train/numbers.md", "plots/languages/train_reward.png",
                     "eval/generations/step_0000005.json"}
    assert read(child, "data/numbers-train/numbers.md") == CARD.read_bytes()
    distribution = json.loads(read(child, "data/numbers-train/languages.json"))
    assert distribution["languages"] == {"en": 12, "ja": 12, "sw": 12} and distribution["rows"] == 36
    assert read(child, "plots/languages/train_reward.png")[:8] == PNG
    assert read(parent.run_id, "plots/compare/train_reward.png")[:8] == PNG
    table = json.loads(read(child, "eval/generations/step_0000005.json"))
    assert table["columns"] == ["language", "prompt", "completion"] and len(table["data"]) == 6
    logged = json.loads(client.get_run(child).data.tags["mlflow.loggedArtifacts"])
    assert {"path": "eval/generations/step_0000005.json", "type": "table"} in logged
    inputs = client.get_run(child).inputs.dataset_inputs
    assert [(i.dataset.name, i.tags[0].value) for i in inputs] == [("numbers-train", "train")]
    assert json.loads(inputs[0].dataset.profile)["num_rows"] == 36
