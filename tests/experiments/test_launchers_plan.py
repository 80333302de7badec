"""The launchers' fast paths: what --dry-run prints under Ray and under torchrun / accelerate launch, what a
Ray task holds, the progress board, and a rank launch that dies before reporting. Their full runs (a local
Ray cluster, two gloo ranks under torchrun) are the slow tests in test_ray_backend.py, test_runner.py and
test_runner_placement.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from mlgrpo.errors import UserError
from mlgrpo.experiments import load_experiment
from mlgrpo.experiments.launch import run_distributed
from mlgrpo.experiments.progress import ProgressBoard, eta
from mlgrpo.experiments import ranks
from mlgrpo.experiments.ray_backend import RETRIES, describe, estimated_peaks, resources, run_on_ray

QUICKSTART = str(Path(__file__).resolve().parents[2] / "experiments" / "quickstart.yaml")


def test_a_ray_dry_run_prints_the_plan_and_what_each_task_holds(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    experiment = load_experiment(QUICKSTART)
    runs = experiment.plan(only=None, seeds=None)
    out = io.StringIO()
    assert run_on_ray(experiment, QUICKSTART, runs, tracking_uri=None, indexed=False, dry_run=True, stream=out) == 0
    text = out.getvalue()
    assert all(run.run_name in text for run in runs)
    assert f"{len(runs)} run(s), each a task holding 0 GPU(s) and 1 CPU(s)" in text and f"up to {RETRIES} times" in text
    assert "a Ray instance started on this machine" in text
    monkeypatch.setenv("RAY_ADDRESS", "ray://127.0.0.1:10001")
    assert "RAY_ADDRESS ray://127.0.0.1:10001" in describe(experiment, runs)[0]


def test_a_cpu_task_holds_its_arms_estimated_memory():
    experiment = load_experiment(QUICKSTART)
    runs = experiment.plan(only=None, seeds=None)
    peaks = estimated_peaks(experiment)
    assert set(peaks) == {run.arm for run in runs} and all(p > 0 for p in peaks.values())
    held = resources(experiment, runs[0], peaks)
    assert held == {"num_gpus": 0, "num_cpus": 1, "memory": int(peaks[runs[0].arm])}
    assert "memory" not in resources(experiment, runs[0])  # no estimate: Ray places by CPUs alone


def test_a_launched_dry_run_prints_the_plan_on_the_main_rank():
    out = io.StringIO()
    assert run_distributed(QUICKSTART, tracking_uri=None, only=["grpo"], seeds=None, dry_run=True, stream=out) == 0
    assert "grpo-seed0" in out.getvalue() and "ppo-seed0" not in out.getvalue()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_board_redraws_in_place_on_a_terminal_and_throttles_plain_lines():
    assert eta(30.0, 10, 40) == "1:30" and eta(5.0, 0, 10) == "?" and eta(5.0, 10, 10) == "0:00"
    plain = io.StringIO()
    board = ProgressBoard(2, plain, plain_every=3600.0)
    for step in (1, 2):  # the second update comes within plain_every: not printed
        board.update({"run": "a", "step": step, "max_steps": 4, "reward": 0.5, "seconds": 2.0 * step})
    board.update({"run": "a", "note": "resuming from checkpoint-2"})
    board.finished("a", "FINISHED", 12.0)
    board.skipped("b", "finished before")
    assert plain.getvalue().splitlines() == ["  a: step 1/4  reward 0.500  ETA 0:06", "  a: resuming from checkpoint-2",
                                             "[1/2] a: FINISHED in 12s", "[2/2] b: skipped (finished before)"]
    tty = Terminal()
    board = ProgressBoard(1, tty)
    board.update({"run": "a", "step": 1, "max_steps": 4, "reward": 0.25, "seconds": 1.0})
    board.update({"run": "a", "step": 2, "max_steps": 4, "reward": 0.75, "seconds": 2.0})
    text = tty.getvalue()
    assert "\x1b[2F\x1b[J" in text  # the two-line block cleared before it is drawn again
    assert text.rstrip().endswith("  a: step 2/4  reward 0.750  ETA 0:02")


def test_rank_zero_tags_its_messages_as_one_json_line(capsys):
    ranks._say({"run": "r0", "step": 3, "reward": 0.5})
    line = capsys.readouterr().out
    assert line.startswith(ranks.TAG) and line.count("\n") == 1
    assert json.loads(line[len(ranks.TAG):]) == {"run": "r0", "step": 3, "reward": 0.5}


@pytest.mark.slow  # torchrun's start: ~4 s alone, 14 s beside other work
def test_ranks_that_exit_before_reporting_are_a_one_line_error(tmp_path):
    log = tmp_path / "worker.log"
    with pytest.raises(UserError, match=r"the 1 ranks of run r0 exited with code 1 before reporting an outcome"):
        ranks.launch_ranks(str(tmp_path / "missing.yaml"), 0, "sqlite:///x.db", "id", str(tmp_path / "r0"), 1,
                     emit=lambda message: None, threads=1, log=log)
    assert "missing.yaml" in log.read_text()
