"""mlgrpo.tracking.views without a browser: which charts each view holds, the UI state it writes, the tag
value (deflated as the UI reads it), the tags set on a real store, and links that open the runs."""

from __future__ import annotations

import base64
import json
import zlib

from mlgrpo.tracking import Tracker
from mlgrpo.tracking.views import (
    MAX_TAG_CHARS, TAG_PREFIX, envelope, plan_views, read_envelope, ui_supports_views, view_state, view_url, write_views,
)

from .conftest import QUICK

LANGUAGES = ["en", "ja"]
KEYS = {f"train/reward/{x}" for x in ("en", "ja", "macro", "worst")} | {
    f"eval/{m}/{x}" for m in ("reward/total", "exact_match", "chrf", "kl_ref") for x in ("en", "ja", "macro", "worst", "gap")
} | {f"eval/change/exact_match/{x}" for x in ("en", "ja")} | {
    "train/loss", "train/entropy", "train/ppo/value_loss", "train/adv/mean/en", "system/samples_per_sec",
    "system/peak_memory_mb", "eval/reward/chrf/en"}


def test_the_views_and_their_charts():
    views = {v.name: v for v in plan_views(KEYS, LANGUAGES)}
    assert list(views) == ["Reward by language", "Held-out metrics by language", "Macro / worst / gap",
                           "PPO and GRPO diagnostics", "Cost"]
    reward = views["Reward by language"]
    assert reward.sections[0].keys == ("train/reward/en", "train/reward/ja", "train/reward/macro", "train/reward/worst")
    held_out = [s.title for s in views["Held-out metrics by language"].sections]
    assert held_out == ["Held-out exact_match per language", "Held-out chrf per language"]  # reward/total: its own view
    assert views["Macro / worst / gap"].sections[1].keys == ("eval/reward/total/macro", "eval/reward/total/worst",
                                                            "eval/reward/total/gap")
    assert "train/ppo/value_loss" in views["PPO and GRPO diagnostics"].keys()
    assert set(views["Cost"].keys()) == {"system/samples_per_sec", "system/peak_memory_mb"}
    # a store with rewards only has no held-out view, and no empty section anywhere
    sparse = plan_views({"train/reward/en", "train/reward/ja"}, LANGUAGES)
    assert [v.name for v in sparse] == ["Reward by language"] and len(sparse[0].sections) == 1


def test_the_state_shows_its_charts_grouped_by_arm_and_hides_every_other_metric():
    view = plan_views(KEYS, LANGUAGES)[0]
    stepped = KEYS - {"system/samples_per_sec", "system/peak_memory_mb"}
    state = view_state(view, KEYS, stepped, groups=3)
    assert state["groupBy"] == {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": "arm"}]}
    assert state["isAccordionReordered"] and state["runsHiddenMode"] == "SHOW_ALL"
    cards = state["compareRunCharts"]
    shown = [c["metricKey"] for c in cards if not c["deleted"]]
    assert shown == list(view.keys())
    assert {c["metricKey"] for c in cards} == KEYS  # every key has a card, so the UI adds none of its own
    sections = {s["uuid"]: s for s in state["compareRunSections"]}
    assert [s["name"] for s in sections.values()] == [s.title for s in view.sections]  # no section for hidden cards
    assert all((c["metricSectionId"] in sections) != c["deleted"] for c in cards)
    train = next(c for c in cards if c["metricKey"] == "train/reward/en")
    assert train["type"] == "LINE" and train["lineSmoothness"] > 0 and not train["useGlobalLineSmoothing"]
    assert next(c for c in cards if c["metricKey"] == "system/samples_per_sec")["type"] == "BAR"  # logged once


def test_the_tag_value_is_the_envelope_the_ui_parses():
    state = view_state(plan_views(KEYS, LANGUAGES)[0], KEYS, KEYS)
    value = envelope("Reward by language", state, now_ms=1000)
    outer = json.loads(value)
    assert (outer["name"], outer["createdAt"], outer["updatedAt"]) == ("Reward by language", 1000, 1000)
    assert outer["state"].startswith("deflate;")  # pako's inflate reads zlib's format
    assert json.loads(zlib.decompress(base64.b64decode(outer["state"][8:]))) == state
    assert read_envelope(value) == ("Reward by language", state)
    assert len(value) < MAX_TAG_CHARS


def test_the_installed_ui_reads_saved_views():
    assert ui_supports_views() is None


def test_write_views_on_a_store(sqlite_uri, tmp_path):
    tracker = Tracker.open(sqlite_uri, "views-store", policy=QUICK, outbox_dir=tmp_path)
    parent = tracker.start_parent("parent")
    for arm in ("ppo", "grpo"):
        child, _ = tracker.child_run(parent, {"arm": arm, "seed": "0"}, f"{arm}-seed0",
                                     {"languages": "en,ja", "arm": arm})
        for step in (1, 2):
            child.log_metrics({"train/reward/en": 0.1 * step, "train/reward/ja": 0.2, "train/adv/mean/en": 0.0}, step)
        child.log_metrics({"system/samples_per_sec": 10.0}, 2)
        child.finish()
    parent.finish()
    experiment, views, warnings = write_views(sqlite_uri, "views-store")
    assert warnings == [] and [v.name for v in views] == ["Reward by language", "Cost"]
    tags = tracker.client.get_experiment(experiment).tags
    name, state = read_envelope(tags[TAG_PREFIX + views[0].key])
    assert name == "Reward by language"
    assert {c["metricKey"] for c in state["compareRunCharts"] if c["deleted"]} == {"train/adv/mean/en",
                                                                                    "system/samples_per_sec"}
    # written again with nothing new: the same tag value (createdAt kept, no needless write)
    before = tags[TAG_PREFIX + views[0].key]
    write_views(sqlite_uri, "views-store")
    assert tracker.client.get_experiment(experiment).tags[TAG_PREFIX + views[0].key] == before
    assert write_views(sqlite_uri, "no-such-experiment")[2] == ["no experiment 'no-such-experiment'"]


def test_links_open_the_runs_page_in_chart_mode():
    assert view_url("http://127.0.0.1:5000", "3") == "http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning"
    assert view_url("http://127.0.0.1:5000/", "3", "mlgrpo-cost").endswith(
        "/#/experiments/3/runs?workflowType=machine_learning&compareRunsMode=CHART&viewStateShareKey=mlgrpo-cost")
