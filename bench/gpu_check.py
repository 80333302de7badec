"""The checks that need a GPU, in one command of at most 8 minutes, with no network and no model download.

    1. the CUDA tests (tests/algorithms/test_group_stats.py on the GPU; group statistics with no host
       synchronisation under torch.cuda.set_sync_debug_mode("error")), and whether the whole advantage
       computation (compute_advantages) synchronises
    2. group_stats throughput at N = 1e6, 1e7, 1e8 rows against the device's memory bandwidth (24 bytes a
       row must move: float32 values and int64 ids in, mean, std and count out)
    3. placement: the trimmed quickstart through `mlgrpo run` with run.gpus_per_run 1 (two runs at once on two
       GPUs, or two in turn on one), its PPO arm sharded with FSDP2 on two GPUs (policy and critic), and a vLLM
       colocated GRPO rollout when vLLM is installed (gpu_placement.py); a shipped GPU recipe
       (qwen2.5-0.5b-lora.yaml) as written, every arm for 2 steps and its probe, with a random-init model of its
       shape (gpu_recipe.py)
    4. bf16 GRPO and PPO steps, full fine-tuning and LoRA, every critic option, on random-init configs of
       Qwen2.5-0.5B's and -1.5B's shapes written locally (the tiny tokenizer): samples/s, tokens/s and
       torch.cuda.max_memory_allocated, beside the memory model's estimate (mlgrpo/trainers/memory.py)

Each training row runs in a fresh process (bench/bench_scale.py --profile gpu). Rows that would start
after the time budget are listed as skipped. Writes one Markdown file (reports/gpu_check.md) and prints it;
`--benchmarks` also puts it into reports/benchmarks.md. Without CUDA it says so in one line and exits 2.

    python -m bench.gpu_check [--budget-s 480] [--benchmarks]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "reports" / "gpu_check.md"
ROWS = (1_000_000, 10_000_000, 100_000_000)
BYTES_PER_ROW = 4 + 8 + 3 * 4
TRAINING = [(size, arm) for size in ("qwen2.5-0.5b-shape", "qwen2.5-1.5b-shape")
            for arm in ("grpo-full", "ppo-full-separate", "ppo-full-head", "grpo-lora", "ppo-lora-separate",
                        "ppo-lora-lora")]
COMMAND = "python -m bench.gpu_check"


def cuda_tests() -> list[list]:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/algorithms/test_group_stats.py"], cwd=ROOT, capture_output=True, text=True)
    summary = (out.stdout.strip().splitlines() or ["(no output)"])[-1]
    return [["pytest tests/algorithms/test_group_stats.py on CUDA", "passed" if out.returncode == 0 else "FAILED",
             summary]]


def sync_checks() -> list[list]:
    """group_stats must never synchronise (the test above asserts it); compute_advantages is reported."""
    import torch

    from mlgrpo.algorithms import AdvantageConfig, GroupKeys, compute_advantages, group_stats

    n = 4096
    rewards = torch.rand(n, device="cuda")
    prompt = torch.arange(n, device="cuda") // 8
    lang = prompt % 6
    rows = []
    for name, call in (
        ("group_stats (prompt groups, language statistics)", lambda: group_stats(rewards, prompt, lang_ids=lang)),
        ("compute_advantages (grpo, std_scope language)", lambda: compute_advantages(
            rewards, GroupKeys(prompt_ids=prompt, lang_ids=lang, languages=tuple("abcdef")),
            AdvantageConfig(std_scope="language"))),
    ):
        call()  # warm-up: lazy initialisation may synchronise once
        torch.cuda.set_sync_debug_mode("error")
        try:
            call()
            verdict, detail = "no host sync", ""
        except RuntimeError as exc:
            verdict, detail = "synchronises", str(exc).splitlines()[0][:120]
        finally:
            torch.cuda.set_sync_debug_mode("default")
        rows.append([name, verdict, detail])
    return rows


def throughput() -> list[list]:
    import torch

    from bench.bench_group_stats import PEAK_GBPS
    from mlgrpo.algorithms import group_stats

    name = torch.cuda.get_device_name(0)
    peak = next((gbps for key, gbps in PEAK_GBPS.items() if key in name), None)
    rows = []
    for n in ROWS:
        values = torch.rand(n, device="cuda")
        ids = torch.randint(0, n // 8 + 1, (n,), device="cuda")
        group_stats(values, ids)
        times = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            group_stats(values, ids)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1000)
        best = min(times)
        gbps = n * BYTES_PER_ROW / best / 1e9
        rows.append([f"{n:.0e}", f"{best * 1e3:.2f}", f"{n / best / 1e6:.0f}", f"{gbps:.0f}",
                     f"{100 * gbps / peak:.1f}%" if peak else "peak unknown"])
        del values, ids
        torch.cuda.empty_cache()
    return rows


def training(budget_end: float) -> list[dict]:
    from bench.bench_scale import measure

    results = []
    for size, arm in TRAINING:
        left = budget_end - time.monotonic()
        if left < 30:
            results.append({"size": size, "arm": arm, "failed": "skipped: the time budget is spent"})
            continue
        results.append(measure(size, arm, profile="gpu", timeout=left))
    return results


def training_rows(results: list[dict]) -> list[list]:
    from bench._memory_fit import point_inputs
    from mlgrpo.trainers.memory import estimate, load_fit

    fit = load_fit()
    rows = []
    for r in results:
        if "failed" in r:
            rows.append([r["size"], r["arm"], "", "", "", "", r["failed"]])
            continue
        point = point_inputs([{**r, "device": "cpu"}])[0]  # the same inputs; the GPU's coefficients below
        est = estimate(point.shape, point.work, fit.gpu()) if fit else math.nan
        rows.append([r["size"], r["arm"], f"{r['samples_per_s']:.2f}", f"{r['tokens_per_s']:.0f}",
                     f"{r['peak_bytes'] / 2**30:.2f}", f"{est / 2**30:.2f}", f"{100 * (est / r['peak_bytes'] - 1):+.0f}%"])
    return rows


def main(budget_s: float, benchmarks: bool) -> int:
    import torch

    if not torch.cuda.is_available():
        print("bench.gpu_check needs a CUDA GPU (torch.cuda.is_available() is False here); nothing was run",
              file=sys.stderr)
        return 2
    from bench._report import markdown_table, write_section

    started = time.monotonic()
    device = f"{torch.cuda.get_device_name(0)}, {torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB"
    checks = cuda_tests() + sync_checks()
    speed = throughput()
    from bench import gpu_placement

    # Each whole-command check gets at most a fifth of the budget: the training rows are the larger part.
    checks += gpu_placement.placement(torch.cuda.device_count(), budget_s / 5)
    checks += gpu_placement.sharded_ppo(torch.cuda.device_count(), budget_s / 5)
    checks += gpu_placement.vllm(budget_s / 5)
    from bench import gpu_recipe

    checks += gpu_recipe.check(budget_s / 5)
    results = training(started + budget_s)
    body = "\n\n".join([
        f"Device: {device}; torch {torch.__version__}; {time.monotonic() - started:.0f} s in all.",
        markdown_table(["check", "result", "detail"], checks),
        "group_stats (mean, std and count per row, groups of ~8):",
        markdown_table(["rows", "ms", "M rows/s", "GB/s (24 B/row)", "of peak bandwidth"], speed),
        "bf16 training steps, 32 completions (4 prompts x G=8) of 64 tokens, 1 warm-up + 3 timed steps, a fresh "
        "process per row; peak = torch.cuda.max_memory_allocated:",
        markdown_table(["shape", "arm", "samples/s", "tokens/s", "peak (GiB)", "memory model (GiB)", "model error"],
                       training_rows(results)),
    ])
    OUTPUT.write_text(f"# GPU check\n\nCommand: `{COMMAND}`\n\n{body}\n", encoding="utf-8")
    print(body)
    if benchmarks:
        write_section("gpu_check", "GPU check: CUDA tests, group_stats bandwidth, bf16 GRPO and PPO steps", body, COMMAND)
    return 0 if all(row[1] != "FAILED" for row in checks) else 1  # a skipped vLLM check is not a failure


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=480.0, help="wall-clock budget (default 8 minutes)")
    parser.add_argument("--benchmarks", action="store_true", help="also write the section into reports/benchmarks.md")
    ns = parser.parse_args()
    sys.exit(main(ns.budget_s, ns.benchmarks))
