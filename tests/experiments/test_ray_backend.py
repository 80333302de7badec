"""`run.backend: ray` on a local Ray cluster of two nodes (ray.cluster_utils.Cluster, every node on 127.0.0.1):
the trimmed quickstart's 2 arms x 2 seeds run on both nodes, tagged with where they ran; a node killed in the
middle of a run, which resumes from its last checkpoint on the other node, no step logged twice.
Skips, naming the install command, without Ray. The refusal of a machine-local output_dir needs no Ray."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from mlgrpo.trainers.checkpoints import EXTRA_STATE

from .test_runner import TRIMMED

EXPERIMENT = "trimmed-ray"  # its own experiment on the session's server, which test_runner also writes to


def write_experiment(tmp_path: Path, shared: bool, steps: int = 4) -> Path:
    text = TRIMMED.read_text(encoding="utf-8").replace("seeds: [0]", "seeds: [0, 1]")
    text = text.replace("name: trimmed-quickstart", f"name: {EXPERIMENT}")
    text = text.replace("max_steps: 4", f"max_steps: {steps}").replace("checkpoint_every: 2", "checkpoint_every: 1")
    text = text.replace("run:\n", "run:\n  backend: ray\n" + ("  output_shared: true\n" if shared else ""), 1)
    path = tmp_path / "trimmed-ray.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def mlgrpo(tmp_path: Path, *args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mlgrpo.cli", "run", "trimmed-ray.yaml", *args], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}, **popen)


@pytest.mark.slow
def test_a_machine_local_output_dir_is_refused_and_a_shared_one_planned(tmp_path):
    write_experiment(tmp_path, shared=False)
    out, err = mlgrpo(tmp_path, "--dry-run").communicate(timeout=300)
    assert "run.backend is ray but run.output_dir (runs/trimmed-ray) is on this machine's" in err, err[-2000:]
    assert "add run.output_shared: true" in err and "Traceback" not in err
    write_experiment(tmp_path, shared=True)
    process = mlgrpo(tmp_path, "--dry-run", env={"RAY_ADDRESS": "127.0.0.1:6379"})
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-2000:]
    assert "placement: on the Ray cluster (RAY_ADDRESS 127.0.0.1:6379): 4 run(s), each a task holding 0 GPU(s)" in err
    assert not (tmp_path / "runs").exists()


@pytest.fixture
def two_nodes(monkeypatch):
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]'")
    from ray.cluster_utils import Cluster

    # Every node on 127.0.0.1: nothing leaves the machine (Ray's switch for single-machine clusters).
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "node_ip_address": "127.0.0.1",
                                                            "include_dashboard": False})
    worker = cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
    try:
        yield cluster, worker
    finally:
        cluster.shutdown()


def children(uri: str) -> dict:
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        return {}
    return {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])
            if "mlflow.parentRunId" in r.data.tags}


def checkpointed_on(uri: str, node_id: str, runs_dir: Path, nodes: dict) -> str | None:
    """A run on `node_id` with a complete checkpoint in its folder. The folders are read first (a step of the
    trimmed run takes ~0.3 s, so the kill must land within a step or two of the first checkpoint); each run's
    node (its placement.node tag, set when its task starts) is asked of the server once, into `nodes`."""
    for state in sorted(runs_dir.glob(f"*/checkpoints/checkpoint-*/{EXTRA_STATE.format(rank=0)}")):  # written last
        name = state.parents[2].name
        if name not in nodes:
            run = children(uri).get(name)
            if run is None or "placement.node" not in run.data.tags:
                continue
            nodes[name] = run.data.tags["placement.node"]
        if nodes[name] == node_id:
            return name
    return None


@pytest.mark.slow
def test_the_grid_runs_on_both_nodes_and_a_run_whose_node_dies_resumes_on_the_other(tmp_path, two_nodes,
                                                                                   mlflow_server, reliability):
    cluster, worker = two_nodes
    write_experiment(tmp_path, shared=True, steps=6)
    uri = mlflow_server.uri
    process = mlgrpo(tmp_path, "--tracking-uri", uri, env={"RAY_ADDRESS": cluster.address})
    runs_dir = tmp_path / "runs" / EXPERIMENT
    killed, nodes, deadline = None, {}, time.monotonic() + 400
    while killed is None and time.monotonic() < deadline and process.poll() is None:
        killed = checkpointed_on(uri, worker.node_id, runs_dir, nodes)
        time.sleep(0.05)
    assert killed, "no run reached a checkpoint on the second node"
    cluster.remove_node(worker, allow_graceful=False)  # the node dies mid-run: raylet and its workers killed
    out, err = process.communicate(timeout=900)
    assert process.returncode == 0, err[-4000:]
    found = children(uri)
    assert sorted(found) == ["grpo-seed0", "grpo-seed1", "ppo-seed0", "ppo-seed1"]
    head = cluster.head_node.node_id
    ran_on = {name: {k.removeprefix("placement.ran_on.") for k in r.data.tags if k.startswith("placement.ran_on.")}
              for name, r in found.items()}
    assert set().union(*ran_on.values()) == {head[:16], worker.node_id[:16]}  # both nodes ran runs
    assert ran_on[killed] == {head[:16], worker.node_id[:16]} and found[killed].data.tags["placement.node"] == head
    assert all(r.data.tags["placement.node_ip"] == "127.0.0.1" for r in found.values())
    client = MlflowClient(uri)
    for name, run in found.items():
        assert run.info.status == "FINISHED", name
        steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
        assert steps == [1, 2, 3, 4, 5, 6], (name, steps)  # each step once, the resumed run's included
        evals = [m.step for m in client.get_metric_history(run.info.run_id, "eval/chrf/en")]
        assert evals == [0, 2, 4, 6], (name, evals)
    resumed = re.search(rf"{killed}: resuming from checkpoint-(\d+)", err)
    assert resumed and int(resumed[1]) < 6, err[-4000:]  # killed mid-run, not after its last step
    assert (tmp_path / "reports" / EXPERIMENT / "report.html").is_file()
    reliability.record("fault", "a Ray node killed mid-run (2-node local cluster)", "survived")
