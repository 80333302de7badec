"""README's quickstart results are the committed report's (bench/quickstart_readme.py), never typed by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.quickstart_readme import BEGIN, END, REPORT, block, markers, readme_block, showcase_names, stale, write


def test_readme_quotes_the_committed_report():
    assert (REPORT / "report.md").exists(), "reports/quickstart/ (report.md, tables/) is committed with the README"
    assert readme_block() == block(), "README's quickstart block is stale: run python -m bench.quickstart_readme"


def test_experiments_readme_quotes_the_committed_showcase_reports():
    names = showcase_names()
    assert {"recipes", "reward_scale"} <= set(names), names  # the showcase runs issue 16 asks to record
    for name in names:
        assert (REPORT.parent / name / "report.md").exists(), f"reports/{name}/ is committed with experiments/README.md"
    assert stale() == [], "run python -m bench.quickstart_readme --experiment NAME for each stale block"


def test_a_showcase_block_names_its_own_report(tmp_path):
    fake_report(tmp_path / "r", [0.7, 0.66])
    begin, end = markers("recipes")
    text = block(tmp_path / "r", "recipes")
    assert text.startswith(begin) and text.endswith(end) and "`reports/recipes/report.md`, word for word" in text
    readme = tmp_path / "README.md"
    readme.write_text(f"x\n\n{begin}\nold\n{end}\n", encoding="utf-8")
    assert showcase_names(readme) == ["recipes"]
    write(readme, tmp_path / "r", "recipes")
    assert readme_block(readme, "recipes") == text


def fake_report(folder, ends):
    (folder / "tables").mkdir(parents=True)
    pd.DataFrame({"arm": ["ppo", "grpo"], "seed": [0, 0], "status": ["FINISHED"] * 2, "wall time (s)": [61.2, 125.0],
                  "reward/total start": [0.65, 0.65], "reward/total end": ends}).to_csv(folder / "tables/runs.csv",
                                                                                         index=False)
    pd.DataFrame({"metric": ["reward/total"] * 2, "language": ["macro"] * 2, "arm": ["ppo", "grpo"],
                  "mean": ends, "low": [0.6, 0.6], "high": [0.8, 0.8]}).to_csv(folder / "tables/final_metrics.csv",
                                                                                index=False)
    (folder / "report.md").write_text("# r\n\n## The answer\n\n- grpo against ppo: no difference\n- two seeds\n\n"
                                      "## Setup\n\n- Model: tiny\n", encoding="utf-8")


def test_the_block_says_what_the_tables_say(tmp_path):
    fake_report(tmp_path / "up", [0.7, 0.66])
    text = block(tmp_path / "up")
    assert "| ppo | 0 | 0.650 -> 0.700 | 1 min 01 s |" in text and "| grpo | 0 | 0.650 -> 0.660 | 2 min 05 s |" in text
    assert "Every run ends above its start" in text and "ppo 0.700 [0.600, 0.800]; grpo 0.660 [0.600, 0.800]" in text
    assert text.endswith("- grpo against ppo: no difference\n- two seeds\n\n" + END)
    fake_report(tmp_path / "down", [0.7, 0.64])
    assert "Not every run ends above its start" in block(tmp_path / "down")


def test_write_replaces_only_the_block(tmp_path):
    fake_report(tmp_path / "r", [0.7, 0.66])
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\n{BEGIN}\nold numbers\n{END}\n\nthe rest\n", encoding="utf-8")
    write(readme, tmp_path / "r")
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# title\n\n" + BEGIN) and text.endswith(END + "\n\nthe rest\n") and "old numbers" not in text


TIME_LOG = """building /root/.cache/mlgrpo/models/tiny-numbers-05a963113a48a983
mlgrpo: building the language-ID model from package data in 125 languages
\tCommand being timed: "mlgrpo run experiments/quickstart.yaml"
\tUser time (seconds): 592.31
\tSystem time (seconds): 73.90
\tPercent of CPU this job got: 177%
\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:06:16.36
\tMaximum resident set size (kbytes): 1786200
"""


def test_the_timed_command_is_recorded_with_its_runs_and_dropped_with_others(tmp_path):
    from bench.quickstart_readme import parse_time_log, record_time, timing_line

    found = parse_time_log(TIME_LOG)
    assert found["wall_s"] == pytest.approx(3600 + 6 * 60 + 16.36) and found["cpu_s"] == pytest.approx(666.21)
    assert found["built"] == ["the language-ID model", "the tiny base model"]
    assert parse_time_log(TIME_LOG.replace("1:06:16.36", "6:16.36"))["wall_s"] == pytest.approx(376.36)
    fake_report(tmp_path / "r", [0.7, 0.66])
    (tmp_path / "time.log").write_text(TIME_LOG, encoding="utf-8")
    record_time(tmp_path / "time.log", "nothing else running", tmp_path / "r")
    line = timing_line(tmp_path / "r")
    assert "66 min 16 s wall for 666 s of CPU, peak memory 1.7 GB" in line and "nothing else running" in line
    assert "includes building the language-ID model and the tiny base model" in line
    assert "66 min 16 s wall" in block(tmp_path / "r")
    fake_report(tmp_path / "other", [0.7, 0.5])  # a report of other runs: the timing does not describe it
    (tmp_path / "other" / "timing.json").write_text((tmp_path / "r" / "timing.json").read_text())
    assert timing_line(tmp_path / "other") is None and "wall for" not in block(tmp_path / "other")
    (tmp_path / "bad.log").write_text("no time here", encoding="utf-8")
    with pytest.raises(SystemExit, match="not GNU time -v output"):
        record_time(tmp_path / "bad.log", "", tmp_path / "r")


def test_clipping_is_read_from_the_diagnostics_table(tmp_path):
    from bench.quickstart_readme import clipping

    fake_report(tmp_path / "r", [0.7, 0.66])
    assert clipping(tmp_path / "r") is None  # a report without the table says nothing about clipping
    pd.DataFrame({"arm": ["ppo", "grpo", "ppo"], "metric": ["train/clip_ratio/region_mean"] * 2 + ["train/ppo/value_clipfrac"],
                  "mean over steps": [0.0035, 0.001, 0.0004], "max": [0.041, 0.02, 0.02]}).to_csv(
        tmp_path / "r" / "tables" / "diagnostics.csv", index=False)
    text = clipping(tmp_path / "r")
    assert "policy ratio was clipped: ppo 0.35% (at most 4.10%); grpo 0.10% (at most 2.00%)" in text
    assert "value predictions clipped: ppo 0.04% (at most 2.00%)" in text and text in block(tmp_path / "r")
