"""Resuming passes over a checkpoint that a kill cut short (no mlgrpo state file, written last)."""

from __future__ import annotations

from mlgrpo.experiments.worker import latest_checkpoint
from mlgrpo.trainers.checkpoints import EXTRA_STATE


def make(folder, step: int, complete: bool):
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "model.safetensors").write_bytes(b"weights")
    if complete:
        (path / EXTRA_STATE.format(rank=0)).write_bytes(b"state")
    return path


def test_the_newest_finished_checkpoint_is_resumed(tmp_path):
    assert latest_checkpoint(tmp_path / "missing") is None
    make(tmp_path, 2, complete=True)
    make(tmp_path, 10, complete=True)  # numeric order, not text order (10 > 4)
    make(tmp_path, 12, complete=False)  # killed while saving
    (tmp_path / "checkpoint-x").mkdir()
    assert latest_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")


def test_no_finished_checkpoint_means_start_again(tmp_path):
    make(tmp_path, 2, complete=False)
    assert latest_checkpoint(tmp_path) is None
