"""Benchmark: seconds to draw about a million indices with each sampler, against TRL's RepeatSampler.

One epoch of each sampler is 999,936 indices (125,000 prompts x G = 8, in generation batches of 64),
drawn from 104,000 rows in three languages at 20:5:1 (the sampler reads only the language labels).
TRL's RepeatSampler over 125,000 rows gives the same number of indices. The samplers are timed in
turns, round after round, so that load from other processes falls on all of them alike; the ratio to
TRL is per round, in the same process. Reward buckets are also timed in training use: rewards reported
after every generation batch, so that the buckets are recomputed and the next batch redrawn.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_sampling [--rounds 7] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from trl.trainer.utils import RepeatSampler

from bench._report import markdown_table, write_section
from mlgrpo.sampling import LanguageSampler, SamplerConfig

ROWS = {"en": 80_000, "ru": 20_000, "sw": 4_000}
G, BATCH, PROMPTS = 8, 64, 125_000
GOAL_SECONDS = 1.0
CONFIGS = {
    "uniform": SamplerConfig(prompts_per_epoch=PROMPTS),
    "balanced": SamplerConfig(name="balanced", prompts_per_epoch=PROMPTS),
    "temperature (alpha 0.3)": SamplerConfig(name="temperature", alpha=0.3, prompts_per_epoch=PROMPTS),
    "oversample sw x4, cap 3": SamplerConfig(
        name="oversample", oversample={"sw": 4.0}, max_repeats_per_item=3, prompts_per_epoch=PROMPTS
    ),
    "balanced + 4 reward buckets": SamplerConfig(name="balanced", reward_buckets=4, prompts_per_epoch=PROMPTS),
}


def labels() -> list[str]:
    return [lang for lang, n in ROWS.items() for _ in range(n)]


def time_epochs(samplers: dict, rounds: int) -> dict[str, list[float]]:
    """Seconds per epoch (list(sampler)) of each sampler, `rounds` times, in turns."""
    seconds: dict[str, list[float]] = {name: [] for name in samplers}
    for _ in range(rounds):
        for name, sampler in samplers.items():
            start = time.perf_counter()
            drawn = list(sampler)
            seconds[name].append(time.perf_counter() - start)
            assert len(drawn) == len(sampler)
    return seconds


def reward_step_ms(rows: list[str], steps: int = 50) -> float:
    """Milliseconds per generation batch when rewards arrive after every batch (update + redraw).

    Every row has a reward before timing starts: the bucket sort then covers all rows, its worst case.
    """
    sampler = LanguageSampler(rows, CONFIGS["balanced + 4 reward buckets"], mini_repeat_count=G, batch_size=BATCH)
    rng = np.random.default_rng(0)
    sampler.update_rewards(np.arange(len(rows)), rng.random(len(rows)))
    iterator = iter(sampler)

    def step() -> None:
        batch = [next(iterator) for _ in range(BATCH * G)]
        sampler.update_rewards(batch, rng.random(len(batch)))

    step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-write", action="store_true", help="print only; leave reports/benchmarks.md alone")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = labels()
    build: dict[str, float] = {}
    samplers: dict = {}
    for name, config in CONFIGS.items():
        start = time.perf_counter()
        samplers[name] = LanguageSampler(rows, config, mini_repeat_count=G, batch_size=BATCH)
        build[name] = time.perf_counter() - start
    samplers["TRL RepeatSampler"] = RepeatSampler(range(PROMPTS), mini_repeat_count=G, batch_size=BATCH, seed=0)
    build["TRL RepeatSampler"] = float("nan")
    seconds = time_epochs(samplers, args.rounds)
    trl = seconds["TRL RepeatSampler"]
    table = []
    for name, times in seconds.items():
        ratio = statistics.median(t / base for t, base in zip(times, trl))
        n = len(samplers[name])
        table.append([name, n, statistics.median(times), min(times), n / statistics.median(times) / 1e6,
                      ratio, build[name] * 1000])
    step_ms = reward_step_ms(rows)
    headers = ["sampler", "indices", "median s", "best s", "M indices/s", "time / TRL's (median)", "build ms"]
    slowest = max(row[2] for row in table if row[0] != "TRL RepeatSampler")
    body = (
        f"{sum(ROWS.values()):,} rows at 20:5:1 (en/ru/sw labels), G = {G}, {BATCH} prompts per generation batch, "
        f"{PROMPTS:,} prompts per epoch; median of {args.rounds} rounds, samplers timed in turns.\n\n"
        + markdown_table(headers, table)
        + f"\n\nGoal: under {GOAL_SECONDS:g} s per million indices; slowest sampler's median {slowest:.3f} s "
        f"({'met' if slowest < GOAL_SECONDS else 'NOT met'}). "
        f"Reward buckets in training use (rewards of every batch reported, buckets recomputed over all "
        f"{sum(ROWS.values()):,} rows, the next batch redrawn): {step_ms:.1f} ms per generation batch of {BATCH} "
        "prompts, on top of the epoch times above.\n\n"
        f"Taken on a shared 2-core machine while other engineers' jobs ran (1-min load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after): absolute seconds move with that load; "
        "the ratio to TRL's sampler, timed in the same rounds, moves less."
    )
    print(body)
    if not args.no_write:
        command = "OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_sampling"
        path = write_section("sampling", "Sampler throughput", body, command)
        print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
