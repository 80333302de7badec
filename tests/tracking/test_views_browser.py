"""The saved views in a real browser: `mlgrpo run` of the quickstart (shortened), then `mlgrpo ui` against
its store, and every view it links loaded in headless Chromium from the real `mlflow server` on 127.0.0.1.
Each must open on its named sections with one chart per language, the runs grouped by arm with every
child run listed, and none of the metrics the view leaves out. This pins the undocumented saved-view
format (mlgrpo.tracking.views) to the pinned MLflow UI: if MLflow changes it, this test fails.

Skipped without a Chromium-family browser (.ci/run installs Debian's `chromium`). The store is the session's
shortened quickstart (tests/conftest.py), which the runner's four-worker test checks too.
"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from bench.browser import NO_CHROMIUM, Chromium, find_chromium

from .conftest import CLI

pytestmark = [pytest.mark.slow, pytest.mark.skipif(find_chromium() is None, reason=NO_CHROMIUM)]

# What each view must show first: its first section's title and that section's charts (titles are metric keys).
EXPECTED = {
    "Reward by language": ("Reward (train) per language, mean over seeds",
                           [f"train/reward/{x}" for x in ("en", "es", "ru", "ar", "ja", "sw", "macro", "worst")]),
    "Held-out metrics by language": ("Held-out exact_match per language",
                                     [f"eval/exact_match/{x}" for x in ("en", "es", "ru", "ar", "ja", "sw")]),
    "Macro / worst / gap": ("Reward (train): macro and worst language", ["train/reward/macro", "train/reward/worst"]),
    "PPO and GRPO diagnostics": ("Optimisation", ["train/loss", "train/grad_norm"]),
    "Cost": ("Throughput, memory and time", ["system/samples_per_sec", "system/peak_memory_mb"]),
}
ARMS = ("ppo", "grpo", "grpo-lang-balanced")
LEFT_OUT = ("train/adv/mean/en", "train/completion_length/en", "eval/length_chars/en")


@pytest.fixture(scope="module")
def store(quickstart_store) -> str:
    """The session's shortened quickstart (tests/conftest.py: 6 languages, 3 arms, 2 seeds, 8 steps)."""
    result = quickstart_store.result
    assert result.returncode == 0, result.stderr[-3000:]
    assert "MLflow views: Reward by language, Held-out metrics by language" in result.stderr  # written by the run
    return quickstart_store.uri


@pytest.fixture(scope="module")
def links(store):
    """{view name: URL} as `mlgrpo ui` prints them (no --experiment: the store's only mlgrpo experiment, as
    the README runs it), with the server it started kept up for the module."""
    ui = subprocess.Popen([*CLI, "ui", "--tracking-uri", store, "--port", "0"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        first = ui.stdout.readline()
        assert first.startswith("MLflow UI: http://127.0.0.1:"), first + ui.stderr.read()
        lines = [ui.stdout.readline() for _ in range(len(EXPECTED) + 2)]
        assert lines[0].startswith("experiment 'quickstart': runs grouped by arm"), lines[0]
        found = {}
        for line in lines[1:]:
            name, _, url = line.strip().rpartition("  ")
            found[name.strip()] = url
        yield first.split()[2], found
    finally:
        os.killpg(ui.pid, signal.SIGINT)
        ui.wait(timeout=150)  # MlflowServer.stop() may take 2 x (15 + 15) s on a busy machine


@pytest.mark.slow
def test_ui_opens_on_the_reward_view_and_links_every_view(links):
    first, found = links
    assert list(found) == [*EXPECTED, "all runs"]
    assert first == found["Reward by language"] and "viewStateShareKey=mlgrpo-reward-by-language" in first
    assert found["all runs"].endswith("/runs?workflowType=machine_learning")


@pytest.mark.slow
@pytest.mark.parametrize("view", list(EXPECTED))
def test_each_view_opens_ready_in_chromium(links, view, tmp_path):
    _, found = links
    section, charts = EXPECTED[view]
    with Chromium(width=1600, height=1400) as browser:
        browser.open(found[view])
        titles = "Array.from(document.querySelectorAll('[title]')).map(e => e.getAttribute('title'))"
        shown = browser.wait_for(f"(() => {{ const t = {titles}; "
                                 f"return {charts!r}.every(c => t.includes(c)) && t; }})()")
        # The runs list renders apart from the charts (seen once in CI: charts drawn, groups not yet listed): wait
        # for every arm's group and children too, then read the page once.
        children = [f"Group: {a}" for a in ARMS] + [f"{a}-seed{s}" for a in ARMS for s in (0, 1)]
        text = browser.wait_for(f"(() => {{ const x = document.body.innerText; "
                                f"return {children!r}.every(c => x.includes(c)) && x; }})()")
        assert section in text and f"{view}\n" in text  # the section, and the view's name in the view picker
        assert "Group by: arm" in text
        assert not [key for key in LEFT_OUT if key in shown]
        assert browser.wait_for("document.querySelectorAll('.js-plotly-plot').length") >= 1  # charts drawn
