"""bench.gpu_check's whole-command checks: placement of runs on GPUs, and a vLLM colocated rollout.

    placement  the trimmed quickstart (tests/experiments/trimmed.yaml: PPO and GRPO, one seed) through
               `mlgrpo run` with run.gpus_per_run 1: with two GPUs or more, both runs at once, each on its own
               GPU; with one, the two in turn on it. Each child run's placement.devices tag, its status, its
               system/peak_memory_mb and the wall time.
    sharded    with two GPUs or more: the trimmed PPO arm on two ranks (run.gpus_per_run 2) with FSDP2
               (training.fsdp: full_shard), the policy and the separate critic both sharded, checkpoints
               included; PPOTrainer refuses a run where accelerate left FSDP off, so FINISHED means sharded.
    vllm       when vLLM is installed: the trimmed GRPO arm with training.use_vllm and vllm_mode colocate on
               the default tiny model (head size 64, which vLLM's attention kernels take); skipped otherwise.

Each check is one `mlgrpo run` in a fresh folder with its own SQLite store, cut at its share of the budget.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRIMMED = ROOT / "tests" / "experiments" / "trimmed.yaml"
NAME = "trimmed-quickstart"


def _run(text: str, timeout: float, *args: str) -> tuple[subprocess.CompletedProcess | None, dict, float]:
    """`mlgrpo run` of `text` in a fresh folder: (process or None if cut by the budget, children by run name, s)."""
    folder = Path(tempfile.mkdtemp(prefix="gpu-check-run-"))
    (folder / "exp.yaml").write_text(text, encoding="utf-8")
    started = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "exp.yaml", *args], cwd=folder,
                                capture_output=True, text=True, timeout=max(1.0, timeout),
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        result = None
    seconds = time.monotonic() - started
    children = child_runs(folder, NAME)
    shutil.rmtree(folder, ignore_errors=True)  # the runs' numbers are read; their checkpoints are not kept
    return result, children, seconds


def child_runs(folder: Path, name: str) -> dict:
    """Experiment `name`'s child runs in the SQLite store `folder`/mlflow.db, by run name (none: {})."""
    if not (folder / "mlflow.db").exists():
        return {}
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{folder}/mlflow.db")
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        return {}
    return {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])
            if "mlflow.parentRunId" in r.data.tags}


def last_line(result) -> str:
    if result is None:
        return "cut by the time budget"
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else f"exit code {result.returncode}"


def placement(gpus: int, timeout: float) -> list[list]:
    text = TRIMMED.read_text(encoding="utf-8").replace("run:\n", "run:\n  gpus_per_run: 1\n", 1)
    text = text.replace("  workers: 2\n", "")  # one worker per GPU ("auto")
    result, children, seconds = _run(text, timeout)
    expected = "two runs at once on GPUs 0 and 1" if gpus >= 2 else "two runs in turn on GPU 0"
    if result is None or result.returncode != 0 or len(children) != 2:
        return [[f"placement: {expected}", "FAILED", last_line(result)]]
    devices = {name: run.data.tags.get("placement.devices", "?") for name, run in children.items()}
    memory = {name: run.data.metrics.get("system/peak_memory_mb") for name, run in children.items()}
    ok = (sorted(devices.values()) == (["0", "1"] if gpus >= 2 else ["0", "0"])
          and all(r.info.status == "FINISHED" for r in children.values()))
    detail = "; ".join(f"{name} on GPU {devices[name]}, peak {memory[name]} MB" for name in sorted(children))
    return [[f"placement: {expected}", "passed" if ok else "FAILED", f"{detail}; {seconds:.0f} s wall"]]


def sharded_ppo_text() -> str:
    """The trimmed quickstart's PPO arm on two ranks with FSDP2."""
    text = TRIMMED.read_text(encoding="utf-8").replace("run:\n", "run:\n  gpus_per_run: 2\n", 1)
    text = text.replace("  workers: 2\n", "")
    return text.replace("  logging_steps: 1\n", "  logging_steps: 1\n  fsdp: full_shard\n  fsdp_config: {version: 2}\n")


def sharded_ppo(gpus: int, timeout: float) -> list[list]:
    name = "sharded PPO step: FSDP2 on 2 GPUs, policy and separate critic"
    if gpus < 2:
        return [[name, "skipped", f"needs 2 GPUs, {gpus} visible"]]
    result, children, seconds = _run(sharded_ppo_text(), timeout, "--only", "ppo")
    run = children.get("ppo-seed0")
    if result is None or result.returncode != 0 or run is None or run.info.status != "FINISHED":
        return [[name, "FAILED", last_line(result)]]
    metrics = run.data.metrics
    return [[name, "passed", f"ranks {run.data.tags.get('placement.ranks')}, critic grad norm "
                             f"{metrics.get('train/ppo/critic_grad_norm')}, peak {metrics.get('system/peak_memory_mb')} "
                             f"MB; {seconds:.0f} s wall"]]


def vllm(timeout: float) -> list[list]:
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        return [["vLLM colocated rollout", "skipped", "vLLM is not installed (pip install vllm, matching torch)"]]
    text = re.sub(r"(?m)^  policy: .*$", '  policy: "tiny"', TRIMMED.read_text(encoding="utf-8"), count=1)  # head 64
    text = text.replace("  logging_steps: 1\n", "  logging_steps: 1\n  use_vllm: true\n  vllm_mode: colocate\n"
                        "  vllm_gpu_memory_utilization: 0.3\n")
    result, children, seconds = _run(text, timeout, "--only", "grpo")
    run = children.get("grpo-seed0")
    if result is None or result.returncode != 0 or run is None or run.info.status != "FINISHED":
        return [["vLLM colocated rollout (GRPO, tiny model)", "FAILED", last_line(result)]]
    return [["vLLM colocated rollout (GRPO, tiny model)", "passed",
             f"train/reward/macro {run.data.metrics.get('train/reward/macro')}; {seconds:.0f} s wall"]]
