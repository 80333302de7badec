"""bench_scale's report: the cost table, the GRPO/PPO ratios by size with the method notes' claims, the memory
model's error on each point, and the ratio plot."""

from __future__ import annotations

from pathlib import Path

from bench._memory_fit import point_inputs
from bench._report import markdown_table

GIB = 2**30
# (label, GRPO arm, PPO arm): the comparisons the ratios are taken over
PAIRS = (
    ("full, separate critic", "grpo-full", "ppo-full-separate"),
    ("full, value head", "grpo-full", "ppo-full-head"),
    ("LoRA, separate critic", "grpo-lora", "ppo-lora-separate"),
    ("LoRA, LoRA critic", "grpo-lora", "ppo-lora-lora"),
)


def _by_key(rows: list[dict]) -> dict[tuple[str, str], dict]:
    return {(r["size"], r["arm"]): r for r in rows}


def _params(rows: list[dict], size: str) -> str:
    row = next((r for r in rows if r["size"] == size and "shape" in r), None)
    return f"{row['shape']['parameters'] / 1e6:.1f}M" if row else "?"


def tables(rows, fit, plot_name, notes_speed, notes_memory, sizes, profile: dict, warmup: int) -> str:
    g, prompts, new_tokens = profile["g"], profile["prompts"], profile["new_tokens"]
    keyed = _by_key(rows)
    cost_rows, ratio_rows = [], []
    arms = ("grpo-full", "ppo-full-separate", "ppo-full-head", "grpo-lora", "ppo-lora-separate", "ppo-lora-lora")
    for size in sizes:
        for arm in arms:
            r = keyed.get((size, arm))
            if r is None:
                continue
            if "failed" in r:
                cost_rows.append([size, _params(rows, size), arm, "failed", r["failed"], "", ""])
                continue
            cost_rows.append([size, _params(rows, size), arm, f"{r['samples_per_s']:.2f}", f"{r['tokens_per_s']:.1f}",
                              f"{r['peak_bytes'] / GIB:.2f}", r["steps"]])
        for label, grpo, ppo in PAIRS:
            a, b = keyed.get((size, grpo)), keyed.get((size, ppo))
            if a and b and "failed" not in a and "failed" not in b:
                ratio_rows.append([size, _params(rows, size), label, f"{a['samples_per_s'] / b['samples_per_s']:.2f}x",
                                   f"{a['peak_bytes'] / b['peak_bytes']:.2f}x"])
    measured = [r for r in rows if "failed" not in r]
    points = point_inputs(measured)
    model_rows = [[p.size, p.arm, f"{p.measured / GIB:.2f}", f"{est / GIB:.2f}", f"{100 * (est / p.measured - 1):+.0f}%"]
                  for p, est in zip(points, _estimates(points, fit))]
    c = fit.cpu
    return "\n\n".join([
        f"Each row a fresh process on CPU (one thread): {warmup} warm-up step, then the timed steps shown; a step "
        f"is one rollout of {g * prompts} completions ({prompts} prompts x G={g}) of exactly {new_tokens} tokens "
        "and one optimiser step (AdamW; LoRA r=8 on q/v). Peak = the resident set's high-water mark during "
        "training, reset after the model is loaded. The Qwen2 sizes are random-init (tiny tokenizer, 1,024 "
        "tokens); gemma-3-270m is the real model (262k-token vocabulary: its embeddings are 168M of its 268M "
        "parameters, and a separate critic copies them).",
        markdown_table(["size", "parameters", "arm", "samples/s", "tokens/s", "peak (GiB)", "timed steps"], cost_rows),
        f"GRPO / PPO by size (the method notes claim {notes_speed:.2f}x throughput and {notes_memory:.2f}x memory "
        "for GRPO against PPO, on a model and hardware they do not name):",
        markdown_table(["size", "parameters", "comparison", "GRPO/PPO samples/s", "GRPO/PPO peak memory"], ratio_rows),
        f"![GRPO/PPO throughput and memory ratios by model size]({plot_name})",
        f"Memory model (mlgrpo/trainers/memory.py; `mlgrpo validate` prints it per arm), fitted to these "
        f"{fit.points} points: process {c.base / 2**20:.0f} MiB, {c.per_vocab / 1024:.2f} KiB per vocabulary entry "
        f"(the tokenizer), activations {c.activation:.1f} bytes per layer x hidden x token, {c.largest_copies:.2f} "
        "copies of the largest tensor in flight per fully trained model; the rest is exact (weights, gradients, "
        f"AdamW, critic, frozen copies, KV cache). Error on the points: median {100 * fit.median_error:.1f}%, max "
        f"{100 * fit.max_error:.1f}%. Each size predicted by a fit without it (largest error): "
        + ", ".join(f"{size} {100 * err:.0f}%" for size, err in fit.cross_validated.items()) + ".",
        markdown_table(["size", "arm", "measured (GiB)", "estimated (GiB)", "error"], model_rows),
    ])


def _estimates(points, fit) -> list[float]:
    from mlgrpo.trainers.memory import estimate

    return [estimate(p.shape, p.work, fit.cpu) for p in points]


def plot(rows: list[dict], path: Path, notes_speed: float, notes_memory: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keyed = _by_key(rows)
    sizes = sorted({r["size"] for r in rows}, key=lambda s: next(r["shape"]["parameters"] for r in rows if r["size"] == s))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for label, grpo, ppo in PAIRS:
        xs, speed, memory = [], [], []
        for size in sizes:
            a, b = keyed.get((size, grpo)), keyed.get((size, ppo))
            if a and b:
                xs.append(a["shape"]["parameters"])
                speed.append(a["samples_per_s"] / b["samples_per_s"])
                memory.append(a["peak_bytes"] / b["peak_bytes"])
        if xs:
            axes[0].plot(xs, speed, marker="o", label=label)
            axes[1].plot(xs, memory, marker="o", label=label)
    for ax, claim, title in ((axes[0], notes_speed, "GRPO / PPO samples/s"), (axes[1], notes_memory, "GRPO / PPO peak memory")):
        ax.axhline(claim, color="grey", linestyle="--", label=f"method notes ({claim:.2f}x)")
        ax.axhline(1.0, color="black", linewidth=0.5)
        ax.set_xscale("log")
        ax.set_xlabel("policy parameters")
        ax.set_title(title)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
