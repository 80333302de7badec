"""`mlgrpo run` interrupted: SIGKILL of the whole process group mid-run, and Ctrl-C; then the same command.

Afterwards every run is FINISHED exactly once, none is left RUNNING, and no metric step is logged twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TRIMMED = Path(__file__).with_name("trimmed.yaml")


STEPS = 32  # long enough that a kill after the first checkpoint (step 2) lands mid-run


def longer_trimmed(folder: Path, extra: str = "") -> Path:
    text = TRIMMED.read_text(encoding="utf-8") + extra
    text = text.replace("  max_steps: 4\n", f"  max_steps: {STEPS}\n").replace("  workers: 2\n", "  workers: 1\n")
    text = text.replace("  every_steps: 2\n", "  every_steps: 8\n")  # held-out evaluations at 0, 8, 16, 24, 32
    path = folder / "trimmed.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def start(folder: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mlgrpo.cli", "run", "trimmed.yaml", "--only", "grpo"], cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})


def wait_for_checkpoint(folder: Path, process: subprocess.Popen, timeout: float = 300) -> None:
    checkpoints = folder / "runs" / "trimmed-quickstart" / "grpo-seed0" / "checkpoints"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if checkpoints.is_dir() and any(checkpoints.glob("checkpoint-*")):
            return
        assert process.poll() is None, process.stdout.read()[-3000:]
        time.sleep(0.2)
    raise AssertionError("no checkpoint was written in time")


def child_runs(folder: Path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{folder}/mlflow.db")
    experiment = client.get_experiment_by_name("trimmed-quickstart")
    runs = [r for r in client.search_runs([experiment.experiment_id]) if "arm" in r.data.tags]
    return client, runs


def max_difference(a: Path, b: Path) -> float:
    """Largest absolute difference between the final weights of grpo-seed0 in two run folders."""
    from safetensors.torch import load_file

    final = Path("runs") / "trimmed-quickstart" / "grpo-seed0" / "final" / "model.safetensors"
    first, second = load_file(a / final), load_file(b / final)
    assert first.keys() == second.keys()
    return max(float((first[k].float() - second[k].float()).abs().max()) for k in first)


def check_finished_once(folder: Path) -> None:
    client, runs = child_runs(folder)
    assert [(r.data.tags["arm"], r.info.status) for r in runs] == [("grpo", "FINISHED")]
    for key in ("train/reward/all", "eval/chrf/en", "train/loss"):
        steps = [m.step for m in client.get_metric_history(runs[0].info.run_id, key)]
        assert len(steps) == len(set(steps)), f"{key} logged twice at a step"
    assert max(m.step for m in client.get_metric_history(runs[0].info.run_id, "train/loss")) == STEPS


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_resumes_from_the_checkpoint(tmp_path, reliability):
    longer_trimmed(tmp_path)
    (tmp_path / "whole").mkdir()
    longer_trimmed(tmp_path / "whole")
    whole = start(tmp_path / "whole")  # the same run never interrupted, beside it on the other core
    process = start(tmp_path)
    wait_for_checkpoint(tmp_path, process)
    os.killpg(process.pid, signal.SIGKILL)  # the runner and its worker, mid-step, no chance to clean up
    process.wait(timeout=60)
    _, runs = child_runs(tmp_path)
    assert [r.info.status for r in runs] == ["RUNNING"]  # what a killed process leaves behind
    again = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "trimmed.yaml", "--only", "grpo"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert again.returncode == 0, again.stderr[-3000:]
    worker_log = (tmp_path / "runs" / "trimmed-quickstart" / "grpo-seed0" / "worker.log").read_text()
    assert "grpo-seed0: FINISHED" in again.stderr
    check_finished_once(tmp_path)
    assert "Traceback" not in worker_log
    # ... and it ends with the parameters of the same run never interrupted
    output, _ = whole.communicate(timeout=600)
    assert whole.returncode == 0, output[-3000:]
    difference = max_difference(tmp_path, tmp_path / "whole")
    assert difference <= 1e-6
    reliability.record("fault", "SIGKILL of mlgrpo run mid-step, then the same command", "survived",
                       max_abs_param_difference=difference)


@pytest.mark.slow
def test_ctrl_c_stops_at_a_step_boundary_marks_killed_and_rerun_finishes(tmp_path, reliability):
    longer_trimmed(tmp_path)
    process = start(tmp_path)
    wait_for_checkpoint(tmp_path, process)
    os.killpg(process.pid, signal.SIGINT)  # what a terminal sends to the foreground group on Ctrl-C
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 130, output[-3000:]
    assert "KILLED" in output and "Traceback" not in output
    _, runs = child_runs(tmp_path)
    assert [r.info.status for r in runs] == ["KILLED"]
    again = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "trimmed.yaml", "--only", "grpo"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert again.returncode == 0, again.stderr[-3000:]
    check_finished_once(tmp_path)
    reliability.record("fault", "Ctrl-C (SIGINT to the process group) mid-run, then the same command", "survived")


@pytest.mark.slow
def test_sigterm_to_the_runner_alone_stops_cleanly_and_rerun_finishes(tmp_path, reliability):
    """A scheduler's or `kill PID`'s SIGTERM reaches only the runner: it passes it on to its workers,
    which stop at a step boundary, save and mark their runs KILLED; the parent run is KILLED too."""
    longer_trimmed(tmp_path)
    process = start(tmp_path)
    wait_for_checkpoint(tmp_path, process)
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 130, output[-3000:]
    assert "KILLED" in output and "Traceback" not in output
    client, runs = child_runs(tmp_path)
    assert [r.info.status for r in runs] == ["KILLED"]
    experiment = client.get_experiment_by_name("trimmed-quickstart")
    parents = [r for r in client.search_runs([experiment.experiment_id]) if "arm" not in r.data.tags]
    assert [r.info.status for r in parents] == ["KILLED"]
    checkpoints = tmp_path / "runs" / "trimmed-quickstart" / "grpo-seed0" / "checkpoints"
    assert any(checkpoints.glob("checkpoint-*"))
    again = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "trimmed.yaml", "--only", "grpo"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert again.returncode == 0, again.stderr[-3000:]
    check_finished_once(tmp_path)
    reliability.record("fault", "SIGTERM to mlgrpo run alone mid-run, then the same command", "survived")


def _refused(folder: Path, extra: str) -> subprocess.CompletedProcess:
    longer_trimmed(folder, extra)
    return subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "trimmed.yaml"], cwd=folder, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.mark.slow
def test_unwritable_output_folder_is_refused_before_anything_starts(tmp_path, reliability):
    (tmp_path / "a_file").write_text("not a folder")
    result = _refused(tmp_path, "  output_dir: a_file/runs\n")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cannot write run outputs to a_file/runs" in result.stderr
    assert not (tmp_path / "mlflow.db").exists()  # refused before any run was created
    reliability.record("fault", "output folder not writable", "survived")


@pytest.mark.slow
def test_a_disk_without_room_is_refused_before_anything_starts(tmp_path, reliability):
    result = _refused(tmp_path, "  min_free_mb: 1000000000\n")  # more than any disk has: as good as full
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "MB free on the disk of" in result.stderr and "run.min_free_mb" in result.stderr
    assert not (tmp_path / "mlflow.db").exists()
    reliability.record("fault", "disk without room for the run (min_free_mb above the free space)", "survived")


ENOSPC_HELPER = r'''
"""Runs inside `unshare --user --map-root-user --mount`: the run folder is a small tmpfs of its own."""
import errno, json, os, subprocess, sys, time
from pathlib import Path

folder = Path(sys.argv[1])
runs = folder / "runs"
runs.mkdir(exist_ok=True)
try:
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(runs)], capture_output=True)
except FileNotFoundError:  # no mount(8)
    sys.exit(77)
if mounted.returncode:
    sys.exit(77)  # the test skips
command = [sys.executable, "-m", "mlgrpo.cli", "run", "trimmed.yaml", "--only", "grpo"]
env = {**os.environ, "OMP_NUM_THREADS": "1"}
process = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
checkpoints = runs / "trimmed-quickstart" / "grpo-seed0" / "checkpoints"
deadline = time.monotonic() + 180
while not any(checkpoints.glob("checkpoint-*/mlgrpo_state_rank0.pt")):  # a complete checkpoint
    assert process.poll() is None and time.monotonic() < deadline, "no checkpoint was written"
    time.sleep(0.1)
filler = os.open(runs / "filler", os.O_WRONLY | os.O_CREAT)  # another job fills the disk mid-run
for size in (2**20, 4096, 1):
    try:
        while True:
            os.write(filler, b"\0" * size)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
os.close(filler)
full_output, _ = process.communicate(timeout=180)
from mlflow import MlflowClient
client = MlflowClient(f"sqlite:///{folder}/mlflow.db")
experiment = client.get_experiment_by_name("trimmed-quickstart")
statuses = sorted(r.info.status for r in client.search_runs([experiment.experiment_id]))
os.remove(runs / "filler")  # room again: the same command resumes
again = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env, timeout=300)
print(json.dumps({"full_rc": process.returncode, "full_output": full_output, "statuses_when_full": statuses,
                  "again_rc": again.returncode, "again_output": again.stderr}))
'''


@pytest.mark.slow
def test_disk_full_mid_run_stops_cleanly_and_the_same_command_resumes(tmp_path, reliability):
    """A real ENOSPC: the run folder is a 64 MB tmpfs (a mount namespace of the test's own), which another
    process fills once the first checkpoint is written. The run stops with one clear line, is marked FAILED
    (not left RUNNING), and once there is room the same command resumes it from its last checkpoint."""
    import json
    import shutil

    # Its own user, mount and PID namespaces: the tmpfs is seen by nothing else, and whatever runs in there
    # dies with it (--kill-child), even when the test times out.
    namespace = ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child"]
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("no unshare(1) or mount(8) here to mount a small tmpfs")
    (tmp_path / "probe").mkdir()
    probe = subprocess.run([*namespace, "mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(tmp_path / "probe")],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode:
        pytest.skip(f"this machine lets no test mount a tmpfs: {probe.stderr.strip()[-200:]}")
    longer_trimmed(tmp_path, "  min_free_mb: 0\n")
    (tmp_path / "enospc.py").write_text(ENOSPC_HELPER, encoding="utf-8")
    result = subprocess.run([*namespace, sys.executable, "enospc.py", str(tmp_path)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=720)
    if result.returncode == 77:
        pytest.skip("this machine lets no test mount a tmpfs")
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    full = outcome["full_output"]
    assert outcome["full_rc"] != 0, full[-3000:]
    assert "No space left on device" in full and "Traceback" not in full, full[-3000:]
    assert "grpo-seed0: the disk of runs/trimmed-quickstart/grpo-seed0 is full" in full
    assert "free some space and run the same command again" in full
    assert outcome["statuses_when_full"] == ["FAILED", "FAILED"]  # the run and its parent, none RUNNING
    assert outcome["again_rc"] == 0, outcome["again_output"][-3000:]
    assert "grpo-seed0: resuming from checkpoint-" in outcome["again_output"], outcome["again_output"][-3000:]
    assert "grpo-seed0: FINISHED" in outcome["again_output"]
    check_finished_once(tmp_path)
    (tmp_path / "outcome.json").write_text(json.dumps(outcome), encoding="utf-8")
    reliability.record("fault", "disk full mid-run (a 64 MB tmpfs filled after the first checkpoint), then the same "
                       "command with room again", "survived")
