"""README's quickstart results are the committed report's (bench/quickstart_readme.py), never typed by hand."""

from __future__ import annotations

import pandas as pd

from bench.quickstart_readme import BEGIN, END, REPORT, block, readme_block, write


def test_readme_quotes_the_committed_report():
    assert (REPORT / "report.md").exists(), "reports/quickstart/ (report.md, tables/) is committed with the README"
    assert readme_block() == block(), "README's quickstart block is stale: run python -m bench.quickstart_readme"


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
