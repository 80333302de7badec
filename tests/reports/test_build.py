"""`mlgrpo report` on a real MLflow store (written through mlgrpo.tracking, as `mlgrpo run` writes it):
every file written, hostile model text escaped, in-progress and missing data said, bad input refused."""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bench.browser import NO_CHROMIUM, find_chromium
from mlgrpo.tracking import FlushPolicy, Tracker

HOSTILE = ['<script>alert(1)</script>', '</script><img src=x onerror=alert(2)>', '" onmouseover="alert(3)',
           "\u202eevil\u202c", "=HYPERLINK(\"http://x\")"]
IDS = [f"item{i}" for i in range(6)]


def _items(arm: str, seed: int) -> dict:
    # grpo gets every en prompt right, ppo none; ja is the same in both arms
    en = [1.0 if arm == "grpo" else 0.0] * 6
    ja = [float(i % 2) for i in range(6)]
    return {"id": IDS + IDS, "language": ["en"] * 6 + ["ja"] * 6, "exact_match": en + ja,
            "reward/total": [v * 0.5 + 0.1 * seed for v in en + ja]}


def _samples(arm: str) -> list[dict]:
    return [{"id": IDS[i], "language": "en" if i < 3 else "ja", "prompt": f"<en> number: {i} ->",
             "completion": f"{arm} {HOSTILE[i % len(HOSTILE)]}", "answers": [f"answer {i}"],
             "exact_match": 1.0 if arm == "grpo" else 0.0} for i in range(6)]


def write_store(uri: str, name: str, arms=("ppo", "grpo"), seeds=(0, 1), running: str | None = None) -> None:
    tracker = Tracker.open(uri, name, policy=FlushPolicy(interval_s=0.2))
    parent = tracker.start_parent(f"{name}-1", {"mlgrpo.version": "test"}, {"arms": ",".join(arms)})
    for arm in arms:
        for seed in seeds:
            identity = {"arm": arm, "seed": str(seed), "config_hash": f"hash{arm}"}
            tags = {**identity, "algorithm": arm, "languages": "en,ja", "system.cpus": "2",
                    "versions.torch": "x"}
            params = {"algorithm.name": arm, "training.learning_rate": "0.001",
                      "training.per_device_train_batch_size": "8", "model.policy": "tiny"}
            handle, _ = tracker.child_run(parent, identity, f"{arm}-seed{seed}", tags, params)
            for step in range(1, 6):
                reward = step * (0.1 if arm == "grpo" else 0.05) + 0.01 * seed
                handle.log_metrics({"train/reward/en": reward, "train/reward/ja": reward / 2,
                                    "train/reward/macro": reward * 0.75, "train/loss": 1.0 / step,
                                    "system/samples_per_sec": 200.0 if arm == "grpo" else 100.0}, step=step)
            items = _items(arm, seed)
            for step in (0, 5):
                handle.log_metrics({"eval/exact_match/en": sum(items["exact_match"][:6]) / 6,
                                    "eval/exact_match/ja": sum(items["exact_match"][6:]) / 6}, step=step)
                handle.log_dict(items, f"eval_items/step_{step:06d}.json")
                handle.log_table(_samples(arm), f"samples/step_{step:06d}.json")
            handle.flush(timeout_s=30)
            if f"{arm}-seed{seed}" != running:
                handle.finish("FINISHED")
    parent.finish("FINISHED")


def report(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mlgrpo.cli", "report", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = set(), []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    uri = f"sqlite:///{folder}/mlflow.db"
    write_store(uri, "cmp", running="grpo-seed1")
    result = report("cmp", "--tracking-uri", uri, "--out", "out", cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder / "out", result


@pytest.mark.slow
def test_every_file_is_written(written):
    out, result = written
    for name in ("report.html", "report.md", "tables/final_metrics.csv", "tables/paired_differences.csv",
                 "tables/stability.csv", "tables/convergence.csv", "tables/cost.csv", "tables/differences.csv",
                 "tables/answer.csv", "tables/diagnostics.csv", "figures/train_reward.png", "figures/forest.png", "blind/sheet.csv"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert (out / "figures/train_reward.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Traceback" not in result.stderr
    # the store under the working directory is named as the reader types it, not by this machine's folder
    assert "*MLflow experiment cmp at sqlite:///mlflow.db; arms" in (out / "report.md").read_text(encoding="utf-8")


def test_a_store_outside_the_working_directory_keeps_its_full_uri(tmp_path):
    from mlgrpo.reports.build import shown_uri

    assert shown_uri(f"sqlite:///{tmp_path}/sub/m.db", cwd=tmp_path) == "sqlite:///sub/m.db"
    assert shown_uri(f"sqlite:///{tmp_path}/m.db", cwd=tmp_path / "elsewhere") == f"sqlite:///{tmp_path}/m.db"
    assert shown_uri("http://127.0.0.1:5000", cwd=tmp_path) == "http://127.0.0.1:5000"


def assert_consistent(rows: list[dict]) -> None:
    """No verdict says more, or less, than its interval: the rule a reader checks by eye."""
    for row in rows:
        verdict, d, low, high = row["verdict"], float(row["difference"]), float(row["low"]), float(row["high"])
        delta = float(row["smallest_effect"])
        if verdict in ("better", "worse"):
            assert (low > 0) == (high > 0) and low * high > 0 and abs(d) >= delta, row
        elif verdict == "no difference":
            assert low <= 0 <= high, row
        elif verdict == "unclear":
            assert low > 0 or high < 0, row
        elif verdict == "negligible":
            assert abs(d) < delta or -delta < low <= high < delta, row
        else:
            assert verdict == "untestable" and row["reason"], row


@pytest.mark.slow
def test_the_first_screen_answers_and_never_contradicts_its_intervals(written):
    out, _ = written
    import html

    page = (out / "report.html").read_text(encoding="utf-8")
    text = html.unescape(page)
    assert "grpo is better on exact_match on en: +1.000 [+1.000, +1.000]" in text
    assert "exact_match on the macro average: +0.500" in text
    # the answer first: verdict, forest plot, wide table; the contents and the details after it
    order = [page.index(marker) for marker in ("<h2>The answer</h2>", "<li>grpo: ", 'id="figure-1-1"',
                                                'id="table-answer"', '<nav class="toc">', "<details><summary><h2>Setup")]
    assert order == sorted(order)
    assert 'class="evidence"' in page and "v-better" in page
    with open(out / "tables/paired_differences.csv", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    rows = {(r["metric"], r["language"]): r for r in table}
    en = rows[("exact_match", "en")]
    assert en["verdict"] == "better" and float(en["difference"]) == pytest.approx(1.0)
    assert float(en["p_adjusted"]) < 0.05 and rows[("exact_match", "ja")]["verdict"] == "negligible"
    assert not math.isnan(float(rows[("exact_match", "macro")]["low"]))
    assert_consistent(table)


def test_in_progress_run_is_said(written):
    out, _ = written
    assert "grpo-seed1 is still running" in (out / "report.md").read_text(encoding="utf-8")
    assert "grpo-seed1 is still running" in (out / "report.html").read_text(encoding="utf-8")


def test_model_text_is_escaped_in_html(written):
    out, _ = written
    html = (out / "report.html").read_text(encoding="utf-8")
    parser = Tags()
    parser.feed(html)
    assert "script" not in parser.tags
    assert all(v.startswith("data:image/png;base64,") for t, k, v in parser.attrs if t == "img" and k == "src")
    assert not [a for a in parser.attrs if a[1].startswith("on")]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\u202e" not in html  # a bidi override cannot reorder the page
    assert "http://" not in html.replace('http://x', '')  # nothing loaded from the network


def test_blind_sheet_hides_the_arms_and_its_key_names_them(written):
    out, _ = written
    with open(out / "blind/sheet.csv", encoding="utf-8") as handle:
        sheet = list(csv.DictReader(handle))
    # the key is neither in the report folder (handed to raters, logged to MLflow) nor beside the sheet
    assert not [p for p in out.rglob("*") if "key" in p.name]
    (key_file,) = (out.parent / "out.private").glob("blind-key-*.csv")
    with open(key_file, encoding="utf-8") as handle:
        key = {r["row"]: r for r in csv.DictReader(handle)}
    assert key_file.name == f"blind-key-{sheet[0]['sheet']}.csv" and {r["sheet"] for r in sheet} == {sheet[0]["sheet"]}
    assert len(sheet) == 6 and set(key) == {r["row"] for r in sheet}
    # Both orders occur. Each row's order is drawn from the system's randomness, so 6 rows share one order 1 time in
    # 32: then fresh sheets are drawn (into another folder) until both have been seen, 5 at most (1 in 10^9 to fail).
    orders = {key[r["row"]]["A"] for r in sheet}
    for attempt in range(5):
        if orders == {"ppo", "grpo"}:
            break
        again = f"again{attempt}"
        assert report("cmp", "--tracking-uri", f"sqlite:///{out.parent}/mlflow.db", "--out", again, cwd=out.parent).returncode == 0
        (fresh,) = (out.parent / f"{again}.private").glob("blind-key-*.csv")
        with open(fresh, encoding="utf-8") as handle:
            orders |= {r["A"] for r in csv.DictReader(handle)}
    assert orders == {"ppo", "grpo"}
    for row in sheet:
        arm_a = key[row["row"]]["A"]
        assert row["output A"].lstrip("'").startswith(arm_a)  # the key says which output is which
        assert not row["output A"].startswith("=")  # no spreadsheet formula


@pytest.mark.slow
def test_one_arm_one_seed(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    write_store(uri, "solo", arms=("grpo",), seeds=(0,))
    result = report("solo", "--tracking-uri", uri, "--out", "solo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    md = (tmp_path / "solo/report.html").read_text(encoding="utf-8")
    assert "Only one arm" in md and "prompts only (1 seed)" in md


@pytest.mark.slow
def test_unknown_experiment_is_one_clear_line(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    write_store(uri, "exists", arms=("grpo",), seeds=(0,))
    result = report("nope", "--tracking-uri", uri, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "no MLflow experiment named 'nope'" in result.stderr and "exists" in result.stderr
    missing = report("missing.yaml", cwd=tmp_path)
    assert missing.returncode == 2 and "no such experiment file" in missing.stderr


@pytest.mark.skipif(find_chromium() is None, reason=NO_CHROMIUM)
def test_a_written_report_renders_in_a_headless_browser(written, tmp_path):
    """The report of a real store (figures from real metrics), screenshot in Chromium: not blank, images
    decoded (a screenshot of a page whose figures failed would be text on white only)."""
    from matplotlib.image import imread

    out, _ = written
    browser = find_chromium()
    shot = tmp_path / "shot.png"
    result = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,6000",
                             f"--screenshot={shot}", (out / "report.html").as_uri()],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    colourful = (pixels.max(axis=-1) - pixels.min(axis=-1)) > 0.3  # plot lines and bars, not grey text
    assert pixels.std() > 0 and colourful.sum() > 2000
