"""bench.gpu_check's recipe check: a shipped GPU recipe's arms, a few steps each, at its model's shape.

    probe   `mlgrpo validate --probe --json` on the file below (the probe's rollouts on the GPU)
    arms    `mlgrpo run` of the recipe as written (bf16, LoRA, its arms, batch, update schedule and rewards), with
            its model replaced by a random-init model of the same shape written to a local folder with the tiny
            tokenizer (no download; bench_scale.GPU_SIZES), 2 optimiser steps per arm, one seed, 8 train
            prompts and 2 held-out prompts per language; each arm's status and peak memory

A recipe that would fail on its first GPU (a setting that cannot act there, an arm that does not start, the
probe) fails here in minutes instead. On a CPU the same path runs with `shape="tiny"` and `small=True` (a
two-layer model and a batch of 8): tests/test_bench_gpu_check.py runs it so.

    python -m bench.gpu_recipe [--recipe experiments/qwen2.5-0.5b-lora.yaml] [--shape tiny --small]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench.gpu_placement import child_runs, last_line

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "experiments" / "qwen2.5-0.5b-lora.yaml"
# The hub models the shipped GPU recipes name -> bench_scale's random-init shape of them
SHAPES = {"Qwen/Qwen2.5-0.5B-Instruct": "qwen2.5-0.5b-shape", "Qwen/Qwen2.5-1.5B-Instruct": "qwen2.5-1.5b-shape"}
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 128, "vocab_size": 1024, "max_position_embeddings": 512, "tie_word_embeddings": True}
STEPS = 2


def write_model(folder: Path, shape: str) -> Path:
    """A random-init Qwen2 model of `shape` ("tiny" or a bench_scale.GPU_SIZES name) with the tiny tokenizer,
    saved as safetensors in bf16 (the recipes' dtype) under `folder`."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    from bench.bench_scale import GPU_SIZES, tokenizer_text
    from mlgrpo.models.tokenizer import train_tokenizer

    tokenizer = train_tokenizer(tokenizer_text(), 1024)
    settings = TINY if shape == "tiny" else GPU_SIZES[shape][0]["qwen2"]
    config = Qwen2Config(**settings, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


def smoke_file(recipe: Path, model: Path, small: bool = False, steps: int = STEPS) -> tuple[str, str]:
    """(the recipe's YAML with the model, size and length cut as the module docstring says, its experiment name).
    small: also a batch of 8 completions (G=4) of 16 tokens, for a CPU."""
    config = yaml.safe_load(recipe.read_text(encoding="utf-8"))
    name = f"{config['name']}-gpu-check"
    config["name"] = name
    config["model"]["policy"] = str(model)
    config["model"].pop("tokenizer", None)
    config["data"]["per_language"] = 8
    config["training"].update(max_steps=steps, logging_steps=1, warmup_steps=0)
    if small:
        config["training"].update(num_generations=4, per_device_train_batch_size=8, gradient_accumulation_steps=1,
                                  max_completion_length=16)
    config["seeds"] = config["seeds"][:1]
    config["evaluation"].update(per_language=2, every_steps=steps, max_new_tokens=16 if small else 64, batch_size=8)
    config["run"] = {"workers": 1, "checkpoint_every": steps}
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True), name


def _mlgrpo(folder: Path, timeout: float, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run([sys.executable, "-m", "mlgrpo.cli", *args], cwd=folder, capture_output=True, text=True,
                              timeout=max(1.0, timeout), env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        return None


def check(timeout: float, recipe: Path = RECIPE, shape: str | None = None, small: bool = False,
          folder: Path | None = None) -> list[list]:
    """Rows [check, result, detail]: the probe, then one per arm of the recipe's first seed."""
    started = time.monotonic()
    config = yaml.safe_load(recipe.read_text(encoding="utf-8"))
    shape = shape or SHAPES.get(config["model"]["policy"])
    label = f"{recipe.name} at {shape} shape"
    if shape is None:
        return [[f"recipe {recipe.name}", "FAILED", f"no random-init shape for {config['model']['policy']}"]]
    folder = folder or Path(tempfile.mkdtemp(prefix="gpu-check-recipe-"))
    text, name = smoke_file(recipe, write_model(folder / "model", shape), small=small)
    (folder / "exp.yaml").write_text(text, encoding="utf-8")
    rows = []
    probe = _mlgrpo(folder, timeout / 3, "validate", "exp.yaml", "--probe", "--probe-prompts", "1", "--json")
    if probe is None or probe.returncode != 0:
        rows.append([f"probe: {label}", "FAILED", last_line(probe)])
    else:
        probes = json.loads(probe.stdout)["probe"]
        languages = sorted({row["language"] for p in probes for row in p["rows"]})
        seconds = [p["timing"].get("step_s") for p in probes]
        rows.append([f"probe: {label}", "passed" if languages else "FAILED",
                     f"{len(probes)} rollout setting(s), {len(languages)} language(s), step {seconds} s"])
    run = _mlgrpo(folder, timeout - (time.monotonic() - started), "run", "exp.yaml")
    children = child_runs(folder, name)
    for arm in config["arms"]:
        child = children.get(f"{arm}-seed{config['seeds'][0]}")
        if child is None:
            rows.append([f"{arm}: {label}, {STEPS} steps", "FAILED", last_line(run)])
            continue
        memory = child.data.metrics.get("system/peak_memory_mb")
        ok = child.info.status == "FINISHED" and child.data.metrics.get("train/global_step", STEPS) >= STEPS
        rows.append([f"{arm}: {label}, {STEPS} steps", "passed" if ok else "FAILED",
                     f"{child.info.status}, peak {memory} MB"])
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", type=Path, default=RECIPE)
    parser.add_argument("--shape", default=None, help="tiny, or a bench_scale.GPU_SIZES name (default: the recipe's)")
    parser.add_argument("--small", action="store_true", help="a batch of 8 completions of 16 tokens (a CPU)")
    parser.add_argument("--timeout-s", type=float, default=300.0)
    ns = parser.parse_args()
    table = check(ns.timeout_s, ns.recipe, ns.shape, ns.small)
    for row in table:
        print(" | ".join(str(x) for x in row))
    sys.exit(0 if all(row[1] == "passed" for row in table) else 1)
