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
