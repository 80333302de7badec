"""PPO vs GRPO cost as models grow: 0.6M to 268M parameters, full fine-tuning and LoRA, every critic option.

Each (size, arm) trains in a fresh process: 1 warm-up step, then a few timed steps (fewer for bigger
models), each step one rollout of 8 completions (2 prompts x G=4) of exactly 24 tokens (min_new_tokens, so
every arm and size generates the same tokens) and one optimiser step, on the numbers suite's prompts in six
languages with a chrF reward. Reported: samples/s and completion tokens/s (median step), and peak memory
while training (CPU: the resident set's high-water mark, reset after the model is loaded; GPU:
torch.cuda.max_memory_allocated). Sizes: the tiny model's two presets, two random-init Qwen2 configs
(a 32,000-entry vocabulary; the tiny tokenizer), and gemma-3-270m (the real model, its 262k-token tokenizer).

The measured peaks fit the memory model's four constants (mlgrpo/trainers/memory.py), written to
mlgrpo/trainers/memory_fit.json with the fit's error; the table, the plot (reports/bench_scale.png) and the
memory model's error go to reports/benchmarks.md, the raw points to reports/bench_scale.json.

    OMP_NUM_THREADS=1 python -m bench.bench_scale                    # every size and arm (~40 min on 2 cores)
    python -m bench.bench_scale --sizes tiny-0.6M,qwen2-31M          # some sizes (the fit uses every stored point)
    python -m bench.bench_scale --one qwen2-31M ppo-lora-lora         # one point, JSON on stdout
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from bench._memory_fit import fit_memory, point_inputs

REPORTS = Path(__file__).resolve().parent.parent / "reports"
RESULTS = REPORTS / "bench_scale.json"
PLOT = REPORTS / "bench_scale.png"
WARMUP = 1
LANGUAGES = ["en", "es", "ru", "ar", "ja", "sw"]
LORA = {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
# The random-init Qwen2 sizes have a 32,000-entry vocabulary (Llama's size; the tiny tokenizer's ids are a
# subset): with gemma's 262,144 that makes two vocabularies from which the memory model's vocabulary-
# dependent constants can be learnt, so that each size can be predicted by a fit without it.
QWEN2 = dict(vocab_size=32000, max_position_embeddings=128, tie_word_embeddings=True)
# name -> (TinySettings overrides as {"tiny": ...}, a Qwen2Config as {"qwen2": ...}, or the packaged model's
# name; timed steps)
SIZES = {
    "tiny-0.6M": ({"tiny": {"hidden_size": 128, "num_layers": 2, "intermediate_size": 512}}, 8),
    "tiny-3.6M": ({"tiny": {}}, 8),
    "qwen2-30M": ({"qwen2": {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
                             "num_key_value_heads": 8, "intermediate_size": 1536, **QWEN2}}, 4),
    "qwen2-123M": ({"qwen2": {"hidden_size": 1024, "num_hidden_layers": 7, "num_attention_heads": 16,
                              "num_key_value_heads": 16, "intermediate_size": 2816, **QWEN2}}, 3),
    "gemma-3-270m": ("gemma-3-270m", 2),
}
# Shapes of Qwen2.5-0.5B and -1.5B (their config.json), random init, for bench/gpu_check.py only; the tiny
# tokenizer's ids are a subset of the vocabulary, so the embeddings are as large as the real models'.
QWEN25 = dict(vocab_size=151936, max_position_embeddings=32768, rope_theta=1e6, tie_word_embeddings=True,
              rms_norm_eps=1e-6)
GPU_SIZES = {
    "qwen2.5-0.5b-shape": ({"qwen2": {"hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14,
                                      "num_key_value_heads": 2, "intermediate_size": 4864, **QWEN25}}, 3),
    "qwen2.5-1.5b-shape": ({"qwen2": {"hidden_size": 1536, "num_hidden_layers": 28, "num_attention_heads": 12,
                                      "num_key_value_heads": 2, "intermediate_size": 8960, **QWEN25}}, 3),
}
# completions per step (G x prompts) and their length: CPU rows small, GPU rows a realistic batch
PROFILES = {"cpu": {"g": 4, "prompts": 2, "new_tokens": 24}, "gpu": {"g": 8, "prompts": 4, "new_tokens": 64}}
# name -> (algorithm, PPO's value_model, LoRA on the policy)
ARMS = {
    "grpo-full": ("grpo", None, False),
    "ppo-full-separate": ("ppo", "separate", False),
    "ppo-full-head": ("ppo", "head", False),
    "grpo-lora": ("grpo", None, True),
    "ppo-lora-separate": ("ppo", "separate", True),
    "ppo-lora-lora": ("ppo", "lora", True),
}
NOTES_SPEED, NOTES_MEMORY = 18.7 / 12.3, 31 / 48  # the method notes' PPO -> GRPO table: 1.52x, 0.65x
COMMAND = "OMP_NUM_THREADS=1 python -m bench.bench_scale"


def model_and_tokenizer(size: str):
    from mlgrpo.models import load_policy
    from mlgrpo.models.architecture import init_model
    from mlgrpo.models.settings import TinySettings
    from mlgrpo.models.tokenizer import train_tokenizer

    spec, _ = {**SIZES, **GPU_SIZES}[size]
    if isinstance(spec, str):
        return load_policy(spec)
    tokenizer = train_tokenizer(tokenizer_text(), 1024)
    if "tiny" in spec:
        return init_model(TinySettings(**spec["tiny"], max_positions=128), tokenizer), tokenizer
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    # a config written here, random weights: float32 on the CPU, bfloat16 on the GPU
    config = Qwen2Config(**spec["qwen2"], pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    cuda = size in GPU_SIZES
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16 if cuda else torch.float32)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return (model.to("cuda") if cuda else model), tokenizer


def load_records() -> list[dict]:
    from mlgrpo.data.suites import load_suite

    return load_suite("numbers", languages=LANGUAGES, split="train", per_language={code: 40 for code in LANGUAGES})


def tokenizer_text() -> list[str]:
    """The whole train split: enough text for the full 1,024-token vocabulary of the tiny models."""
    from mlgrpo.data.suites import load_suite

    return [r["prompt"] + " " + r["reference"] for r in load_suite("numbers", languages=LANGUAGES, split="train")]


def run_one(size: str, arm: str, profile: str = "cpu") -> dict:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig

    from mlgrpo.algorithms import AdvantageConfig
    from mlgrpo.models.shape import count
    from mlgrpo.rewards import RewardConfig, build_reward_functions
    from mlgrpo.runtime import configure_threads
    from mlgrpo.trainers import AlgorithmConfig, MultilingualGRPOTrainer, PPOSettings, PPOTrainer

    configure_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    algorithm, critic, lora = ARMS[arm]
    steps = {**SIZES, **GPU_SIZES}[size][1]
    g, prompts, new_tokens = (PROFILES[profile][k] for k in ("g", "prompts", "new_tokens"))
    model, tokenizer = model_and_tokenizer(size)
    records = load_records()
    dataset = Dataset.from_list([{k: r[k] for k in ("prompt", "reference", "answers", "language")} for r in records])
    funcs, weights = build_reward_functions(RewardConfig.from_dict({"rewards": [{"name": "chrf"}]}))
    cuda = torch.cuda.is_available()

    class Clock(TrainerCallback):
        ends: list[float] = []

        def on_step_end(self, args, state, control, **kwargs):
            Clock.ends.append(time.perf_counter())

    args = GRPOConfig(output_dir=f"/tmp/mlgrpo-bench-scale-{os.getpid()}", use_cpu=not cuda, bf16=cuda, fp16=False,
                      report_to="none", num_generations=g, per_device_train_batch_size=g * prompts,
                      steps_per_generation=1, max_completion_length=new_tokens,
                      generation_kwargs={"min_new_tokens": new_tokens}, max_steps=WARMUP + steps, save_strategy="no",
                      seed=0, logging_steps=1000, disable_tqdm=True, learning_rate=1e-5, reward_weights=weights)
    peft = None
    if lora:
        from peft import LoraConfig

        peft = LoraConfig(task_type="CAUSAL_LM", **LORA)
    common = dict(model=model, reward_funcs=funcs, args=args, train_dataset=dataset, processing_class=tokenizer,
                  callbacks=[Clock()], peft_config=peft)
    if algorithm == "grpo":
        trainer = MultilingualGRPOTrainer(**common)
    else:
        ppo = AlgorithmConfig(name="ppo", advantage=AdvantageConfig(estimator="gae", std_scope="batch"),
                              ppo=PPOSettings(value_model=critic))
        trainer = PPOTrainer(**common, algorithm=ppo)
    before = reset_peak(cuda)
    trainer.train()
    peak = read_peak(cuda)
    times = [b - a for a, b in zip(Clock.ends[WARMUP - 1 :], Clock.ends[WARMUP:])]
    step = statistics.median(times)
    shape = count(model.config, LORA if lora else None)
    prompt_tokens = max(len(ids) for ids in tokenizer([r["prompt"] for r in records])["input_ids"])
    return {"size": size, "arm": arm, "algorithm": algorithm, "critic": critic, "lora": lora,
            "device": "cuda" if cuda else "cpu", "steps": len(times), "step_s": step,
            "samples_per_s": g * prompts / step, "tokens_per_s": g * prompts * new_tokens / step,
            "peak_bytes": peak, "bytes_before_train": before, "weight_bytes": model.dtype.itemsize,
            "shape": shape.__dict__, "rollout": g * prompts, "micro_batch": g * prompts,
            "prompt_tokens": prompt_tokens, "completion_tokens": new_tokens}


def reset_peak(cuda: bool) -> int:
    """Start the peak from here (what loading the model took is not training's); returns memory now."""
    import torch

    if cuda:
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated()
    with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
        handle.write("5")  # Linux: reset the resident set's high-water mark (VmHWM) to the current RSS
    return _status_kib("VmRSS") * 1024


def read_peak(cuda: bool) -> int:
    import torch

    return torch.cuda.max_memory_allocated() if cuda else _status_kib("VmHWM") * 1024


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def measure(size: str, arm: str, profile: str = "cpu", timeout: float | None = None) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    try:
        out = subprocess.run([sys.executable, "-m", "bench.bench_scale", "--one", size, arm, "--profile", profile],
                             capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"size": size, "arm": arm, "failed": f"over {timeout:.0f} s"}
    if out.returncode != 0:  # e.g. killed for memory: recorded, not hidden
        tail = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"size": size, "arm": arm, "failed": f"exit {out.returncode}: {tail[:200]}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(sizes: list[str]) -> None:
    stored = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else []
    for size in sizes:
        for arm in ARMS:
            started = time.perf_counter()
            row = measure(size, arm)
            print(json.dumps({k: row.get(k) for k in ("size", "arm", "samples_per_s", "peak_bytes", "failed")}),
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
            stored = sorted([r for r in stored if (r["size"], r["arm"]) != (size, arm)] + [row], key=_order)
            RESULTS.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
    report(stored)


def _order(row: dict) -> tuple[int, int]:
    """Sizes smallest first, then the arms in ARMS order (a re-measured size keeps its place)."""
    sizes, arms = list(SIZES), list(ARMS)
    return (sizes.index(row["size"]) if row["size"] in sizes else len(sizes),
            arms.index(row["arm"]) if row["arm"] in arms else len(arms))


def report(rows: list[dict]) -> None:
    rows = sorted(rows, key=_order)
    from bench._report import write_section
    from bench._scale_report import plot, tables

    measured = [r for r in rows if "failed" not in r]
    fit = fit_memory(point_inputs(measured), command=COMMAND, day=date.today().isoformat())
    from mlgrpo.trainers.memory import FIT_FILE

    FIT_FILE.write_text(json.dumps(fit.to_json(), indent=1) + "\n", encoding="utf-8")
    plot(measured, PLOT, NOTES_SPEED, NOTES_MEMORY)
    body = tables(rows, fit, PLOT.name, NOTES_SPEED, NOTES_MEMORY, SIZES, PROFILES["cpu"], WARMUP)
    print(body)
    write_section("scale", "PPO vs GRPO cost as models grow (0.6M to 268M parameters)", body, COMMAND)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--one", nargs=2, metavar=("SIZE", "ARM"))
    parser.add_argument("--profile", choices=PROFILES, default="cpu", help="batch and completion length (gpu_check: gpu)")
    parser.add_argument("--sizes", default=",".join(SIZES), help=f"comma-separated, from {', '.join(SIZES)}")
    parser.add_argument("--report-only", action="store_true", help="redo the fit, table and plot from stored points")
    ns = parser.parse_args()
    if ns.one:
        print(json.dumps(run_one(*ns.one, ns.profile)))
    elif ns.report_only:
        report(json.loads(RESULTS.read_text(encoding="utf-8")))
    else:
        main([s for s in ns.sizes.split(",") if s])
