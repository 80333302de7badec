"""README's quickstart results, written from the committed report (reports/quickstart/), never by hand.

    mlgrpo run experiments/quickstart.yaml        # writes reports/quickstart/ (report.md, tables/*.csv)
    python -m bench.quickstart_readme             # rewrites README.md's block between the two markers
    python -m bench.quickstart_readme --check     # exit 1 when README's block is not what the report says

The block holds, from the report's own files: every run's macro held-out metrics at the first and the last
evaluation (tables/runs.csv), each arm's mean over seeds with its 95% interval (tables/final_metrics.csv),
and the report's answer, word for word (report.md). tests/test_quickstart_readme.py fails when README's
block differs from what this writes, so a number in it cannot be edited by hand or go stale.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "reports" / "quickstart"
README = ROOT / "README.md"
BEGIN = "<!-- begin:quickstart-results: written by `python -m bench.quickstart_readme` from reports/quickstart/ -->"
END = "<!-- end:quickstart-results -->"
HEADLINE = "reward/total"  # the report's first headline metric: exact match + 0.5 chrF, as the rewards say


def block(folder: Path = REPORT) -> str:
    """The README block for the report in `folder`."""
    runs = pd.read_csv(folder / "tables" / "runs.csv")
    final = pd.read_csv(folder / "tables" / "final_metrics.csv")
    metrics = [c[: -len(" start")] for c in runs.columns if c.endswith(" start")]
    header = ["arm", "seed", *(f"{m} (macro): start -> end" for m in metrics), "run time"]
    rows = [[str(r.arm), str(r.seed), *(f"{_num(r[f'{m} start'])} -> {_num(r[f'{m} end'])}" for m in metrics),
             _duration(r["wall time (s)"])] for _, r in runs.iterrows()]
    above = all(r[f"{HEADLINE} end"] > r[f"{HEADLINE} start"] for _, r in runs.iterrows())
    macro = final[(final.metric == HEADLINE) & (final.language == "macro")]
    means = [f"{r.arm} {_num(r['mean'])} [{_num(r.low)}, {_num(r.high)}]" for _, r in macro.iterrows()]
    lines = [BEGIN, "", _table(header, rows), "",
             f"{'Every' if above else 'Not every'} run ends above its start on the held-out {HEADLINE} (macro over "
             f"languages). Mean over seeds [95% interval], {HEADLINE}: " + "; ".join(means) + ".", "",
             "The report's answer (`reports/quickstart/report.md`, word for word):", "",
             *answer_bullets(folder / "report.md"), "", END]
    return "\n".join(lines)


def answer_bullets(report_md: Path) -> list[str]:
    """The bullets of report.md's first section ("The answer")."""
    text = report_md.read_text(encoding="utf-8")
    section = text.split("\n## The answer\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- ")]


def readme_block(readme: Path = README) -> str | None:
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        return None
    return BEGIN + text.split(BEGIN, 1)[1].split(END, 1)[0] + END


def write(readme: Path = README, folder: Path = REPORT) -> None:
    text = readme.read_text(encoding="utf-8")
    current = readme_block(readme)
    if current is None:
        raise SystemExit(f"{readme}: no {BEGIN!r} ... {END!r} markers; put them where the results go")
    readme.write_text(text.replace(current, block(folder)), encoding="utf-8")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _num(value) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{float(value):.3f}"


def _duration(seconds) -> str:
    seconds = round(float(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when README is out of date")
    args = parser.parse_args(argv)
    if args.check:
        same = readme_block() == block()
        print("README's quickstart block matches the report" if same else
              "README's quickstart block differs from reports/quickstart/: run python -m bench.quickstart_readme")
        return 0 if same else 1
    write()
    print(f"wrote the quickstart block of {README} from {REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
