"""README's quickstart results, and experiments/README.md's showcase results, written from the committed
reports (reports/<name>/), never by hand.

    mlgrpo run experiments/quickstart.yaml        # writes reports/quickstart/ (report.md, tables/*.csv)
    python -m bench.quickstart_readme             # rewrites README.md's block between the two markers
    python -m bench.quickstart_readme --check     # exit 1 when a block (README.md, experiments/README.md) is not
                                                  # what its report says
    mlgrpo run experiments/recipes.yaml           # likewise reports/recipes/, quoted in experiments/README.md:
    python -m bench.quickstart_readme --experiment recipes

    /usr/bin/time -v mlgrpo run experiments/quickstart.yaml 2> time.log
    python -m bench.quickstart_readme --time time.log --note "a fresh machine, nothing else running"
                                                  # records the command's wall and CPU time with the report

The block holds, from the report's own files: every run's macro held-out metrics at the first and the last
evaluation (tables/runs.csv), each arm's mean over seeds with its 95% interval (tables/final_metrics.csv),
how often each arm's updates were clipped (tables/diagnostics.csv), the report's answer, word for word
(report.md), and the whole command's time as GNU time measured it (timing.json, written by --time; it names
the runs.csv it was measured with, and a report rewritten from other runs drops it). tests/test_quickstart_readme.py fails when README's
block differs from what this writes, so a number in it cannot be edited by hand or go stale.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "reports" / "quickstart"
README = ROOT / "README.md"
EXPERIMENTS_README = ROOT / "experiments" / "README.md"
BEGIN = "<!-- begin:quickstart-results: written by `python -m bench.quickstart_readme` from reports/quickstart/ -->"
END = "<!-- end:quickstart-results -->"
_SHOWCASE_BEGIN = re.compile(r"<!-- begin:([\w.-]+)-results: written by `python -m bench.quickstart_readme --experiment")
TIMING = "timing.json"
HEADLINE = "reward/total"  # the report's first headline metric: exact match + 0.5 chrF, as the rewards say


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of experiment `name`'s block."""
    if name == "quickstart":
        return BEGIN, END
    return (f"<!-- begin:{name}-results: written by `python -m bench.quickstart_readme --experiment {name}` from "
            f"reports/{name}/ -->", f"<!-- end:{name}-results -->")


def showcase_names(readme: Path = EXPERIMENTS_README) -> list[str]:
    """The experiments whose blocks `readme` holds."""
    return _SHOWCASE_BEGIN.findall(readme.read_text(encoding="utf-8"))


def block(folder: Path = REPORT, name: str = "quickstart") -> str:
    """The README block for the report in `folder` (experiment `name`)."""
    begin, end = markers(name)
    runs = pd.read_csv(folder / "tables" / "runs.csv")
    final = pd.read_csv(folder / "tables" / "final_metrics.csv")
    metrics = [c[: -len(" start")] for c in runs.columns if c.endswith(" start")]
    header = ["arm", "seed", *(f"{m} (macro): start -> end" for m in metrics), "run time"]
    rows = [[str(r.arm), str(r.seed), *(f"{_num(r[f'{m} start'])} -> {_num(r[f'{m} end'])}" for m in metrics),
             _duration(r["wall time (s)"])] for _, r in runs.iterrows()]
    above = all(r[f"{HEADLINE} end"] > r[f"{HEADLINE} start"] for _, r in runs.iterrows())
    macro = final[(final.metric == HEADLINE) & (final.language == "macro")]
    means = [f"{r.arm} {_num(r['mean'])} [{_num(r.low)}, {_num(r.high)}]" for _, r in macro.iterrows()]
    lines = [begin, "", _table(header, rows), "",
             f"{'Every' if above else 'Not every'} run ends above its start on the held-out {HEADLINE} (macro over "
             f"languages). Mean over seeds [95% interval], {HEADLINE}: " + "; ".join(means) + ".", "",
             *_paragraph(clipping(folder)),
             *([] if name == "quickstart" else [*_paragraph(change(folder)), *_paragraph(signal(folder))]),
             *_paragraph(timing_line(folder)),
             f"The report's answer (`reports/{name}/report.md`, word for word):", "",
             *answer_bullets(folder / "report.md"), "", end]
    return "\n".join(lines)


def _paragraph(text: str | None) -> list[str]:
    return [text, ""] if text else []


def clipping(folder: Path) -> str | None:
    """How much each arm's updates were clipped, from the report's tables/diagnostics.csv."""
    path = folder / "tables" / "diagnostics.csv"
    if not path.exists():
        return None
    table = pd.read_csv(path)
    parts = []
    for metric, what in (("train/clip_ratio/region_mean", "share of tokens whose policy ratio was clipped"),
                         ("train/ppo/value_clipfrac", "share of PPO's value predictions clipped")):
        rows = table[table.metric == metric]
        if len(rows):
            parts.append(f"{what}: " + "; ".join(f"{r.arm} {_percent(r['mean over steps'])} (at most {_percent(r['max'])})"
                                                 for _, r in rows.iterrows()))
    if not parts:
        return None
    return ("Clipping, mean over the logged steps (the largest value any seed logged), from the report's "
            "tables/diagnostics.csv: " + ". ".join(parts) + ".")


def change(folder: Path) -> str | None:
    """Each arm's held-out change since step 0 with its paired 95% interval, from tables/change.csv; the metrics
    whose interval lies above 0 named."""
    path = folder / "tables" / "change.csv"
    if not path.exists():
        return None
    table = pd.read_csv(path)
    rows = [[str(r.arm), str(r.metric), _num(r.start), _num(r.end), f"{float(r.change):+.3f} [{float(r.low):+.3f}, "
             f"{float(r.high):+.3f}]", "above 0" if r.low > 0 else "below 0" if r.high < 0 else "includes 0"]
            for _, r in table.iterrows()]
    return ("Change since step 0 on the same held-out prompts, per arm (the report's tables/change.csv: paired by "
            "seed and prompt, 95% interval):\n\n" + _table(["arm", "metric", "step 0", "end", "change [95%]",
                                                               "interval"], rows))


def signal(folder: Path) -> str | None:
    """Whether training had a live signal, from tables/diagnostics.csv: the zero-std share per language and
    the held-out KL to the initial policy, first -> last logged value (mean over seeds)."""
    path = folder / "tables" / "diagnostics.csv"
    if not path.exists():
        return None
    table = pd.read_csv(path)
    if "first" not in table.columns:
        return None
    rows = [[str(r.arm), str(r.diagnostic), f"{_num(r['first'])} -> {_num(r['last'])}", _num(r["mean over steps"])]
            for _, r in table.iterrows() if str(r.metric).startswith(("train/adv/frac_zero_std/", "eval/kl_ref/",
                                                                       "train/frac_reward_zero_std"))]
    if not rows:
        return None
    return ("The signal, from the report's tables/diagnostics.csv (first -> last logged value, and the mean over "
            "the logged steps):\n\n" + _table(["arm", "diagnostic", "first -> last", "mean"], rows))


def _percent(value) -> str:
    return f"{100 * float(value):.2f}%"


def _runs_digest(folder: Path) -> str:
    return hashlib.sha256((folder / "tables" / "runs.csv").read_bytes()).hexdigest()


def parse_time_log(text: str) -> dict:
    """GNU time -v's figures (wall, user + system CPU, peak RSS, the command) from a log that may hold the
    command's own output before them; and which one-time builds it did (the tiny model, the language-ID model,
    a real model's safetensors)."""
    def field(label):
        found = re.search(rf"^\s*{re.escape(label)}: (.+)$", text, re.MULTILINE)
        if not found:
            raise SystemExit(f"not GNU time -v output (no {label!r} line): time the run with /usr/bin/time -v")
        return found.group(1).strip()

    *rest, seconds = field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
    wall = float(seconds) + sum(int(part) * 60 ** (len(rest) - i) for i, part in enumerate(rest))
    return {"command": field("Command being timed").strip('"'), "wall_s": wall,
            "cpu_s": float(field("User time (seconds)")) + float(field("System time (seconds)")),
            "peak_rss_mb": int(field("Maximum resident set size (kbytes)")) / 1024,
            "built": [what for marker, what in (("building the language-ID model", "the language-ID model"),
                                                ("building /", "the tiny base model"),
                                                ("from GGUF to safetensors", "the real model's safetensors"))
                      if marker in text]}


def record_time(log: Path, note: str, folder: Path = REPORT) -> dict:
    """Write folder/timing.json: the timed command's figures, the machine's cores, the date and `note`."""
    found = parse_time_log(log.read_text(encoding="utf-8", errors="replace"))
    found.update(cores=os.cpu_count(), date=datetime.date.today().isoformat(), note=note,
                 runs_csv_sha256=_runs_digest(folder))
    (folder / TIMING).write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    return found


def timing_line(folder: Path) -> str | None:
    """The sentence for timing.json, when it was measured with this report's runs; else None."""
    path = folder / TIMING
    if not path.exists():
        return None
    found = json.loads(path.read_text(encoding="utf-8"))
    if found.get("runs_csv_sha256") != _runs_digest(folder):
        return None  # timed with other runs than the report now shows
    built = " and ".join(found["built"])
    return (f"The whole command, timed (`/usr/bin/time -v {found['command']}`, {found['date']}, {found['cores']} "
            f"cores{', ' + found['note'] if found.get('note') else ''}): {_duration(found['wall_s'])} wall for "
            f"{found['cpu_s']:.0f} s of CPU, peak memory {found['peak_rss_mb'] / 1024:.1f} GB"
            + (f"; that includes building {built}, which later runs re-use." if built else "."))


def answer_bullets(report_md: Path) -> list[str]:
    """The bullets of report.md's first section ("The answer")."""
    text = report_md.read_text(encoding="utf-8")
    section = text.split("\n## The answer\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- ")]


def readme_block(readme: Path = README, name: str = "quickstart") -> str | None:
    begin, end = markers(name)
    text = readme.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        return None
    return begin + text.split(begin, 1)[1].split(end, 1)[0] + end


def write(readme: Path = README, folder: Path = REPORT, name: str = "quickstart") -> None:
    text = readme.read_text(encoding="utf-8")
    current = readme_block(readme, name)
    if current is None:
        raise SystemExit(f"{readme}: no {' ... '.join(markers(name))} markers; put them where the results go")
    readme.write_text(text.replace(current, block(folder, name)), encoding="utf-8")


def stale() -> list[str]:
    """The blocks (README.md's quickstart, experiments/README.md's showcases) that differ from their reports."""
    found = [] if readme_block() == block() else ["quickstart"]
    return found + [name for name in showcase_names()
                    if readme_block(EXPERIMENTS_README, name) != block(ROOT / "reports" / name, name)]


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
    parser.add_argument("--time", type=Path, metavar="LOG",
                        help="GNU time -v output of the run that wrote the report: recorded in timing.json first")
    parser.add_argument("--note", default="", help="with --time: how the machine was (e.g. nothing else running)")
    parser.add_argument("--experiment", default="quickstart", metavar="NAME",
                        help="whose block to write: quickstart (README.md) or a showcase in experiments/README.md")
    args = parser.parse_args(argv)
    folder = ROOT / "reports" / args.experiment
    readme = README if args.experiment == "quickstart" else EXPERIMENTS_README
    if args.time:
        found = record_time(args.time, args.note, folder)
        print(f"recorded {_duration(found['wall_s'])} wall, {found['cpu_s']:.0f} s CPU in {folder / TIMING}")
    if args.check:
        found = stale()
        print("every results block matches its report" if not found else
              f"results blocks differ from their reports: {', '.join(found)}; run python -m bench.quickstart_readme "
              "--experiment NAME for each")
        return 1 if found else 0
    write(readme, folder, args.experiment)
    print(f"wrote the {args.experiment} block of {readme} from {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
