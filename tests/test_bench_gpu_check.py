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
