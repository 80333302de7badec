"""bench.gpu_check on a machine without CUDA refuses in one line; its model shapes are the real models' sizes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_refuses_without_cuda_in_one_line():
    out = subprocess.run([sys.executable, "-m", "bench.gpu_check"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=300)
    assert out.returncode == 2
    assert out.stderr.strip() == ("bench.gpu_check needs a CUDA GPU (torch.cuda.is_available() is False here); "
                                  "nothing was run")
    assert not out.stdout.strip()


def test_gpu_shapes_have_the_parameters_of_qwen2_5_0_5b_and_1_5b():
    from transformers import Qwen2Config

    from bench.bench_scale import GPU_SIZES
    from mlgrpo.models.shape import count

    small, large = (count(Qwen2Config(**GPU_SIZES[name][0]["qwen2"]), None).parameters
                    for name in ("qwen2.5-0.5b-shape", "qwen2.5-1.5b-shape"))
    assert small == 494_032_768 and large == 1_543_714_304  # Qwen2.5-0.5B and -1.5B, tied embeddings


def test_the_sharded_ppo_check_runs_a_valid_file_and_skips_below_two_gpus(tmp_path):
    from bench.gpu_placement import sharded_ppo, sharded_ppo_text
    from mlgrpo.experiments import load_experiment

    path = tmp_path / "sharded.yaml"
    path.write_text(sharded_ppo_text(), encoding="utf-8")
    experiment = load_experiment(path)
    assert experiment.run_settings.gpus_per_run == 2
    run = next(r for r in experiment.plan() if r.arm == "ppo")
    assert run.training["fsdp"] == "full_shard" and run.algorithm.ppo.value_model == "separate"
    assert sharded_ppo(1, 1.0) == [["sharded PPO step: FSDP2 on 2 GPUs, policy and separate critic", "skipped",
                                    "needs 2 GPUs, 1 visible"]]


def test_the_gpu_recipe_smoke_keeps_every_setting_but_the_model_and_size(tmp_path):
    import yaml

    from bench.gpu_recipe import RECIPE, SHAPES, smoke_file

    original = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))
    text, name = smoke_file(RECIPE, tmp_path / "model")
    smoke = yaml.safe_load(text)
    assert SHAPES[original["model"]["policy"]] == "qwen2.5-0.5b-shape" and name == "qwen2.5-0.5b-lora-gpu-check"
    assert smoke["model"] == {**original["model"], "policy": str(tmp_path / "model")}  # dtype and LoRA as written
    assert smoke["arms"] == original["arms"] and smoke["update"] == original["update"]
    assert smoke["rewards"] == original["rewards"] and smoke["training"]["bf16"] is True
    kept = {k: v for k, v in original["training"].items() if k not in ("max_steps", "logging_steps", "warmup_steps")}
    assert {k: smoke["training"][k] for k in kept} == kept  # the batch, loss and learning rate as written
    assert smoke["training"]["max_steps"] == 2 and smoke["seeds"] == [0]


@pytest.mark.slow
def test_the_gpu_recipe_check_runs_a_shipped_recipes_arms_and_probe_on_a_cpu(tmp_path, monkeypatch):
    """The path bench.gpu_check takes on the GPU, at a tiny shape and batch: every arm of the recipe trains its
    2 steps with bf16 acting (CPU autocast) and the probe answers."""
    from bench.gpu_recipe import check

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    rows = check(600, shape="tiny", small=True, folder=tmp_path)
    assert [row[0].split(":")[0] for row in rows] == ["probe", "ppo", "grpo", "grpo-lang-std"], rows
    assert all(row[1] == "passed" for row in rows), rows
