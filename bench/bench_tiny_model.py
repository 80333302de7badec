"""Benchmark: building the tiny base model (wall time, SFT steps, starting exact match per language).

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_tiny_model [--seeds 0,1,2] [--presets default,small]

Builds each preset for each seed in one process, into a temporary folder (never the user's cache),
prints a table and writes it to reports/benchmarks.md (section `tiny_model`). The "small" preset is
the 0.6M model the research found fastest per second; the table shows why the default is larger.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time

from bench._report import markdown_table, write_section
from mlgrpo.models.settings import TinySettings

PRESETS = {
    "default": TinySettings(),
    "small": TinySettings(hidden_size=128, num_layers=2, intermediate_size=512, learning_rate=2e-3),
}
COMMAND = "OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_tiny_model"


def measure(preset: str, seed: int, models_dir: str) -> dict:
    from mlgrpo.models.tiny import build_tiny

    settings = dataclasses.replace(PRESETS[preset], seed=seed)
    started = time.perf_counter()
    folder = build_tiny(settings, models_dir=models_dir, force=True)
    seconds = time.perf_counter() - started
    info = json.loads((folder / "build_info.json").read_text(encoding="utf-8"))
    warm = info["warm_start"]
    measuring = sum(check["measure_seconds"] for check in warm["checks"])
    return {
        "preset": preset, "seed": seed, "parameters": info["parameters"], "steps": warm["steps"],
        "stopped_by": warm["stopped_by"], "build_s": seconds, "sft_s": warm["seconds"],
        "step_s": (warm["seconds"] - measuring) / warm["steps"], "checks": len(warm["checks"]),
        "check_s": measuring / len(warm["checks"]), "heldout_em": warm["checks"][-1]["exact_match"],
        "final": info["final_exact_match"], "samples": info["samples"],
    }  # fmt: skip


def table(rows: list[dict], languages: tuple[str, ...]) -> str:
    headers = ["preset", "seed", "params", "SFT steps", "build s", "SFT s", "s/step", "s/check",
               "held-out EM at stop", "final EM", *languages]  # fmt: skip
    body = [
        [r["preset"], r["seed"], f"{r['parameters']:,}", r["steps"], round(r["build_s"], 1), round(r["sft_s"], 1),
         round(r["step_s"], 3), round(r["check_s"], 3), round(r["heldout_em"], 3), round(r["final"]["macro"], 3),
         *(round(r["final"]["by_language"][lang], 2) for lang in languages)]
        for r in rows
    ]  # fmt: skip
    return markdown_table(headers, body)


def summary(rows: list[dict]) -> str:
    lines = []
    by_preset = {p: [r for r in rows if r["preset"] == p] for p in dict.fromkeys(r["preset"] for r in rows)}
    for preset, group in by_preset.items():
        builds = [r["build_s"] for r in group]
        spread = [max(r["final"]["by_language"].values()) - min(r["final"]["by_language"].values()) for r in group]
        lines.append(
            f"- {preset}: build {statistics.mean(builds):.0f} s on average ({min(builds):.0f}-{max(builds):.0f}), "
            f"{statistics.mean(r['steps'] for r in group):.0f} SFT steps, final EM "
            f"{statistics.mean(r['final']['macro'] for r in group):.3f}; gap between the best and the worst "
            f"language {statistics.mean(spread):.2f}."
        )
    if len(by_preset) == 2:
        (a, ga), (b, gb) = by_preset.items()
        ratio = statistics.mean(r["step_s"] for r in ga) / statistics.mean(r["step_s"] for r in gb)
        lines.append(f"- Time per SFT step, {a} / {b}, same process: {ratio:.1f}x.")
    return "\n".join(lines)


def samples(row: dict) -> str:
    lines = []
    for language, shown in row["samples"].items():
        for s in shown:
            mark = "ok" if s["exact_match"] else "wrong"
            lines.append(f"| {language} | `{s['prompt']}` | {s['output']} | {s['reference']} | {mark} |")
    return "| language | prompt | greedy output | reference | |\n|---|---|---|---|---|\n" + "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--presets", default="default,small")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-tiny-") as models_dir:
        for preset in args.presets.split(","):
            for seed in seeds:
                rows.append(measure(preset, seed, models_dir))
                print(f"{preset} seed {seed}: {rows[-1]['build_s']:.1f} s, {rows[-1]['steps']} steps", flush=True)
    languages = TinySettings().languages
    body = (
        "Numbers taken on a shared 2-core machine (other engineers' jobs ran alongside), one torch "
        "thread; wall times vary with that load, so compare the ratio measured in the same process. "
        "Each build: tokenizer + Qwen2 init + TRL SFT until held-out greedy exact match (macro mean over "
        f"languages, 32 eval-split prompts each) reaches {TinySettings().target_exact_match}, checked every "
        f"{TinySettings().check_every} steps; then final exact match on 100 other eval-split prompts per language. "
        "`s/step` excludes the checks; `s/check` is one held-out measurement.\n\n"
        f"{table(rows, languages)}\n\n{summary(rows)}\n\n"
        f"Sample generations ({rows[0]['preset']} preset, seed {rows[0]['seed']}):\n\n{samples(rows[0])}"
    )
    print(body)
    write_section("tiny_model", "Tiny base model build (mlgrpo model build-tiny)", body, COMMAND)


if __name__ == "__main__":
    main()
