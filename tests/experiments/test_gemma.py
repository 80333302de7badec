"""experiments/gemma-270m-lora.yaml, shortened, end to end: the real gemma-3-270m from PyPI (converted once per
machine), LoRA, PPO with its LoRA critic and GRPO, 2 steps each, evaluated per language on real generations."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from safetensors.torch import load_file

from .conftest import EXPERIMENTS

LANGUAGES = ["de", "ja"]


def shortened(tmp_path):
    config = yaml.safe_load((EXPERIMENTS / "gemma-270m-lora.yaml").read_text(encoding="utf-8"))
    config["name"] = "gemma-test"
    config["data"].update(languages=LANGUAGES, per_language=4)
    config["update"] = {"minibatches": 1, "epochs": 1}
    config["training"].update(num_generations=2, per_device_train_batch_size=2, max_completion_length=8, max_steps=2,
                              logging_steps=1)
    config["evaluation"].update(per_language=2, max_new_tokens=8, batch_size=4)
    config["run"].update(checkpoint_every=2)
    path = tmp_path / "gemma-test.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


@pytest.mark.slow
def test_gemma_experiment_trains_ppo_and_grpo_with_lora_and_evaluates(tmp_path):
    from mlflow.tracking import MlflowClient

    path = shortened(tmp_path)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    result = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", str(path), "--tracking-uri", uri,
                             "--only", "ppo", "--only", "grpo"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=900, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ppo-seed0: FINISHED" in result.stderr and "grpo-seed0: FINISHED" in result.stderr
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("gemma-test").experiment_id])
    children = {r.data.tags["arm"]: r for r in runs if "mlflow.parentRunId" in r.data.tags}
    assert sorted(children) == ["grpo", "ppo"]
    for arm, run in children.items():
        for language in LANGUAGES:
            history = client.get_metric_history(run.info.run_id, f"eval/chrf/{language}")
            assert sorted(m.step for m in history) == [0, 2]  # before the first step and after the last
            assert f"train/reward/{language}" in run.data.metrics or language not in _trained(run)
        samples = json.load(open(client.download_artifacts(run.info.run_id, "samples/step_000002.json"),
                                 encoding="utf-8"))
        column = samples["columns"].index("completion")  # pandas' "split" layout
        completions = [row[column] for row in samples["data"]]
        assert completions and any(text.strip() for text in completions)  # real generations
        assert all("\n" not in text.rstrip("\n") for text in completions)  # each ends at its first line break
        adapter = load_file(str(tmp_path / "runs" / "gemma-test" / f"{arm}-seed0" / "final" / "adapter_model.safetensors"))
        lora_b = [value for key, value in adapter.items() if "lora_B" in key]
        assert lora_b and max(v.abs().max().item() for v in lora_b) > 0  # B starts at zero: the policy moved
    assert "train/ppo/value_loss" in children["ppo"].data.metrics
    critic = load_file(str(tmp_path / "runs" / "gemma-test" / "ppo-seed0" / "checkpoints" / "checkpoint-2" /
                           "critic.safetensors"))
    assert any(".critic." in key for key in critic) and "head.weight" in critic  # its adapter and head, no copy
    # r=16 on every linear layer: 3.8M (adapter and head) vs 268M for a separate critic
    assert sum(v.numel() for v in critic.values()) < 0.02 * 268_000_000


def _trained(run) -> set[str]:
    return {key.split("/")[-1] for key in run.data.metrics if key.startswith("train/reward/")}
