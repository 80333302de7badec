"""Benchmark: group_stats (per-group mean, std, count broadcast to rows) against the usual ways to do it.

Data at each N: GRPO-like groups of variable size (70% of prompts with 8 completions, 20% with 16, 10%
partial groups of 1-7), rows of a prompt adjacent, prompt ids a random permutation (not sorted),
rewards in [0, 1) with 5% NaN (unscored). Contenders, all returning mean, std (ddof=1) and count per row:

- group_stats with the ids GroupKeys produces (dense: below N), and with 63-bit hashed ids (the sorting
  route every accelerator takes; on CPU small ids skip the sort);
- a Python dict loop; pandas `groupby(ids).transform("mean" | "std" | "count")`;
- TRL's reshape path (nanmean / trl's nanstd over `view(-1, G)` plus repeat_interleave), which only
  handles fixed groups: compared with group_stats on the same fixed-size batch (G = 8).
Contenders are timed in turns, round after round, so that load from other processes falls on all alike;
each time is the best round (more rounds at small N), and ratios are of best times from the same rounds.

With `--device cuda` the torch contenders run on the GPU (timed with synchronisation) and the table adds
achieved memory bandwidth: the bytes group_stats must move at least (values and ids read, mean, std and
count written: 24 bytes a row in float32) over its time, as a share of the card's peak.

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_group_stats [--device cuda] [--rounds 9] [--no-write]
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict

import numpy as np
import pandas as pd
import torch
from trl.trainer.utils import nanstd

from bench._report import markdown_table, write_section
from mlgrpo.algorithms import group_stats

SIZES = (1_000, 10_000, 100_000, 1_000_000)
G = 8
MIN_BYTES_PER_ROW = 4 + 8 + 3 * 4  # float32 values and int64 ids in; mean, std, count out
PEAK_GBPS = {"H200": 4800, "H100 PCIe": 2000, "H100": 3350, "A100-SXM4-80GB": 2039, "A100": 1555, "L40S": 864,
             "L4": 300, "A10": 600, "T4": 320, "4090": 1008, "V100": 900}


def variable_groups(n: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) int64 prompt ids: adjacent rows per prompt, sizes 8 / 16 / 1-7, ids permuted."""
    sizes = rng.choice([8, 16, 0], size=n, p=[0.7, 0.2, 0.1])
    sizes[sizes == 0] = rng.integers(1, 8, size=int((sizes == 0).sum()))
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), n) + 1]
    ids = np.repeat(rng.permutation(len(sizes)), sizes)[:n]
    return ids.astype(np.int64)


def rewards(n: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.random(n, dtype=np.float32)
    x[rng.random(n) < 0.05] = np.nan
    return x


def python_loop(values: torch.Tensor, ids: torch.Tensor):
    members = defaultdict(list)
    vals, keys = values.tolist(), ids.tolist()
    for v, g in zip(vals, keys):
        if v == v:  # not NaN
            members[g].append(v)
    stats = {}
    for g, xs in members.items():
        n = len(xs)
        mean = sum(xs) / n
        std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
        stats[g] = (mean, std, float(n))
    rows = [stats.get(g, (math.nan, math.nan, 0.0)) for g in keys]
    return tuple(torch.tensor(col) for col in zip(*rows))


def pandas_transform(values: torch.Tensor, ids: torch.Tensor):
    grouped = pd.Series(values.numpy()).groupby(ids.numpy())
    return tuple(grouped.transform(f).to_numpy() for f in ("mean", "std", "count"))


def trl_reshape(values: torch.Tensor, g: int):
    """Mean and std per row as GRPOTrainer computes them (it needs no count)."""
    grouped = values.view(-1, g)
    return torch.nanmean(grouped, dim=1).repeat_interleave(g), nanstd(grouped, dim=1).repeat_interleave(g)


def round_times(contenders: dict, rounds: int, sync, warm_up: bool = True) -> dict[str, list[float]]:
    """Seconds of each contender in each of `rounds` rounds taken in turns (after one warm-up call:
    first calls pay for lazy initialisation, CUDA kernels' above all)."""
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    for fn in contenders.values() if warm_up else ():
        fn()
    for _ in range(rounds):
        for name, fn in contenders.items():
            sync()
            start = time.perf_counter()
            fn()
            sync()
            seconds[name].append(time.perf_counter() - start)
    return seconds


def rounds_for(n: int, minimum: int) -> int:
    """More rounds where a round is short: about 2e6 rows per contender in all, at most 200 rounds."""
    return max(minimum, min(200, 2_000_000 // n))


def loop_rounds_for(n: int, minimum: int) -> int:
    """The dict loop takes about 0.3 s at 1e5 and 5 s at 1e6: fewer rounds there."""
    return minimum if n <= 10_000 else 3 if n <= 100_000 else 1


def measure(n: int, device: str, rounds: int, rng: np.random.Generator) -> dict[str, float]:
    ids_np, values_np = variable_groups(n, rng), rewards(n, rng)
    cpu_values, cpu_ids = torch.from_numpy(values_np), torch.from_numpy(ids_np)
    values, ids = cpu_values.to(device), cpu_ids.to(device)
    hashed = (ids * 0x9E3779B97F4A7C15 + 12345) & ((1 << 63) - 1)  # wrapped multiply: 63-bit ids
    fixed_ids = torch.arange(n // G, device=device).repeat_interleave(G)
    check(group_stats(values, ids), pandas_transform(cpu_values, cpu_ids))
    check(group_stats(values, hashed), pandas_transform(cpu_values, cpu_ids))
    check(group_stats(values, fixed_ids), trl_reshape(values, G))
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    seconds = round_times(
        {
            "dense": lambda: group_stats(values, ids),
            "hashed": lambda: group_stats(values, hashed),
            "pandas": lambda: pandas_transform(cpu_values, cpu_ids),
            "trl": lambda: trl_reshape(values, G),
            "fixed": lambda: group_stats(values, fixed_ids),
        },
        rounds_for(n, rounds),
        sync,
    )
    loop = {"loop": lambda: python_loop(cpu_values, cpu_ids)}
    seconds.update(round_times(loop, loop_rounds_for(n, rounds), lambda: None, warm_up=False))
    times = {name: min(s) for name, s in seconds.items()}
    times["groups"] = float(len(np.unique(ids_np)))
    return times


def check(ours, theirs) -> None:
    """Same numbers; a group with one value has std NaN in pandas, 0 in group_stats (its docs)."""
    theirs = [torch.tensor(t) if isinstance(t, np.ndarray) else t.cpu() for t in theirs]
    theirs = [t.double() for t in theirs]
    theirs[1] = torch.where(ours.count.cpu() == 1, 0.0, theirs[1])
    for a, b in zip((ours.mean, ours.std, ours.count), theirs):
        torch.testing.assert_close(a.cpu().double(), b.cpu().double(), rtol=1e-4, atol=1e-5, equal_nan=True)


def peak_gbps(override: float | None) -> tuple[float, str]:
    if override:
        return override, "given"
    props = torch.cuda.get_device_properties(0)
    clock_khz, bus_bits = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
    if clock_khz and bus_bits:
        return 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9, "memory clock x bus width"
    for name, gbps in PEAK_GBPS.items():
        if name in props.name:
            return float(gbps), "datasheet"
    raise SystemExit(f"unknown peak bandwidth for {props.name}: pass --peak-gbps")


def table(results: dict[int, dict[str, float]], device: str, peak: float | None) -> str:
    headers = ["N", "groups", "group_stats ms", "hashed ids ms", "dict loop ms", "pandas ms", "loop / ours",
               "pandas / ours", "fixed G=8: TRL ms", "fixed: ours ms", "ours / TRL"]
    if peak:
        headers += ["GB/s", "share of peak"]
    rows = []
    for n, t in results.items():
        ms = {k: v * 1e3 for k, v in t.items()}
        row = [n, int(t["groups"]), ms["dense"], ms["hashed"], ms["loop"], ms["pandas"], t["loop"] / t["dense"],
               t["pandas"] / t["dense"], ms["trl"], ms["fixed"], t["fixed"] / t["trl"]]
        if peak:
            gbps = MIN_BYTES_PER_ROW * n / t["dense"] / 1e9
            row += [gbps, f"{gbps / peak:.1%}"]
        rows.append(row)
    return markdown_table(headers, rows)


def goals(results: dict[int, dict[str, float]]) -> str:
    at_1e5, all_n = results.get(100_000), results.values()
    lines = [
        f"- >= 100x the dict loop at N = 1e5: {at_1e5['loop'] / at_1e5['dense']:.0f}x" if at_1e5 else "",
        "- faster than pandas at every N: " + ("yes" if all(t["dense"] < t["pandas"] for t in all_n) else "no"),
        f"- within 2x of TRL's fixed-group reshape path: worst {max(t['fixed'] / t['trl'] for t in all_n):.2f}x",
        "- 63-bit ids (the sorting route) against pandas: "
        + ", ".join(f"{t['hashed'] / t['pandas']:.2f}x its time at N={n}" for n, t in results.items()),
    ]
    return "\n".join(line for line in lines if line)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--peak-gbps", type=float, default=None, help="the card's peak memory bandwidth")
    parser.add_argument("--no-write", action="store_true", help="print only; leave reports/benchmarks.md alone")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device here")
    rng = np.random.default_rng(0)
    results = {n: measure(n, args.device, args.rounds, rng) for n in args.sizes}
    rounds = ", ".join(
        f"N={n}: {rounds_for(n, args.rounds)} rounds, loop {loop_rounds_for(n, args.rounds)}" for n in args.sizes
    )
    peak, source = peak_gbps(args.peak_gbps) if args.device == "cuda" else (None, "")
    where = torch.cuda.get_device_name(0) if args.device == "cuda" else f"CPU, {torch.get_num_threads()} torch thread(s)"
    body = (
        f"Device: {where}. Shared machine: other engineers' jobs ran on the same 2 cores, so absolute times "
        "move from run to run. Each time is the best of its rounds (interference only adds time), taken in "
        f"turns ({rounds}); ratios are of best times from the same rounds.\n"
        "Variable groups (8, 16, or 1-7 rows; 5% NaN rewards) for group_stats, the loop and pandas; "
        "fixed groups of 8 for the TRL comparison. 'hashed ids' are 63-bit ids, which take the sorting route "
        "(always taken on accelerators).\n\n" + table(results, args.device, peak) + "\n\n" + goals(results)
    )
    if peak:
        body += f"\n\nPeak bandwidth {peak:.0f} GB/s ({source}); bytes counted: {MIN_BYTES_PER_ROW} per row."
    print(body)
    if not args.no_write:
        suffix = " --device cuda" if args.device == "cuda" else ""
        command = f"OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_group_stats{suffix}"
        name = "group_stats" + ("_cuda" if args.device == "cuda" else "")
        print("wrote", write_section(name, f"group_stats on {args.device}", body, command))


if __name__ == "__main__":
    main()
