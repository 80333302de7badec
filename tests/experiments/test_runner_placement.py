"""`mlgrpo run` pins each worker to its GPUs. A CPU machine has none, but CUDA_VISIBLE_DEVICES names devices
all the same: the workers get their groups, a two-GPU run starts two gloo ranks, and each child run records
where it ran (tags placement.devices, placement.ranks). On a GPU box bench.gpu_check runs the same on GPUs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_runner import TRIMMED, runs_of


def run(tmp_path: Path, *args: str, devices: str, gpus_per_run: int | None) -> subprocess.CompletedProcess:
    text = TRIMMED.read_text(encoding="utf-8")
    if gpus_per_run is not None:
        text = text.replace("run:\n", f"run:\n  gpus_per_run: {gpus_per_run}\n", 1)
    (tmp_path / "trimmed.yaml").write_text(text, encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": devices}
    return subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "trimmed.yaml", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, env=env)


def children(tmp_path: Path) -> dict:
    client, runs = runs_of(f"sqlite:///{tmp_path}/mlflow.db", "trimmed-quickstart")
    return client, {r.info.run_name: r for r in runs if "mlflow.parentRunId" in r.data.tags}


@pytest.mark.slow
def test_dry_run_prints_the_placement_and_refuses_more_gpus_than_visible(tmp_path):
    result = run(tmp_path, "--dry-run", devices="4,6", gpus_per_run=None)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "placement: 2 run(s) in 2 worker(s), 1 wave(s); 2 GPU(s) visible (4,6), 1 per run" in result.stderr
    assert "ppo-seed0                    GPU 4" in result.stderr and "grpo-seed0                   GPU 6" in result.stderr
    validate = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "validate", "trimmed.yaml"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "4,6"})
    assert validate.returncode == 0, validate.stderr[-2000:]
    assert "placement: 2 run(s) in 2 worker(s), 1 wave(s); 2 GPU(s) visible (4,6)" in validate.stdout
    assert validate.stdout.rstrip().endswith("OK")
    refused = run(tmp_path, "--dry-run", devices="0", gpus_per_run=2)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "run.gpus_per_run is 2 but this machine shows 1 GPU(s) (0)" in refused.stderr
    # validate checks a file meant for a bigger machine, and says where it would not run
    validate = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "validate", "trimmed.yaml"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "0"})
    assert validate.returncode == 0, validate.stderr[-2000:]
    assert "placement: not on this machine: run.gpus_per_run is 2 but this machine shows 1 GPU(s)" in validate.stdout
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_two_runs_at_once_each_on_its_own_device(tmp_path):
    result = run(tmp_path, devices="3,5", gpus_per_run=1)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 run(s) to train in 2 worker process(es), 1 torch thread(s) each on GPU groups 3 5" in result.stderr
    _, found = children(tmp_path)
    assert sorted(r.data.tags["placement.devices"] for r in found.values()) == ["3", "5"]
    assert all(r.info.status == "FINISHED" for r in found.values())


@pytest.mark.slow
def test_a_run_on_two_devices_trains_on_two_ranks_and_logs_each_step_once(tmp_path):
    result = run(tmp_path, "--only", "grpo", devices="0,1", gpus_per_run=2)
    assert result.returncode == 0, result.stderr[-3000:]
    client, found = children(tmp_path)
    grpo = found["grpo-seed0"]
    assert grpo.info.status == "FINISHED"
    assert (grpo.data.tags["placement.devices"], grpo.data.tags["placement.ranks"]) == ("0,1", "2")
    steps = [m.step for m in client.get_metric_history(grpo.info.run_id, "train/loss")]
    assert steps == [1, 2, 3, 4]
    assert (tmp_path / "runs" / "trimmed-quickstart" / "grpo-seed0" / "final" / "model.safetensors").is_file()
