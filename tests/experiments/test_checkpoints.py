"""Resuming passes over a checkpoint that a kill cut short (no mlgrpo state file, written last), and never
continues from checkpoints another configuration wrote into the same run folder."""

from __future__ import annotations

import json

import pytest

from mlgrpo.errors import UserError
from mlgrpo.experiments.worker import OWNER, claim_run_folder, latest_checkpoint
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


def test_checkpoints_of_another_configuration_are_never_resumed(tmp_path):
    # Found by hand: two experiment files with one run.output_dir; the second resumed the first's
    # grpo-lang-balanced-seed0 from its checkpoint-250 and reported it as its own run.
    run_dir = tmp_path / "grpo-seed0"
    claim_run_folder(run_dir, "qs-a", "grpo-seed0", "aaaaaaaaaaaa")  # a new folder: claimed
    assert json.loads((run_dir / OWNER).read_text())["config_hash"] == "aaaaaaaaaaaa"
    claim_run_folder(run_dir, "qs-b", "grpo-seed0", "bbbbbbbbbbbb")  # no checkpoint yet: nothing to continue
    make(run_dir / "checkpoints", 20, complete=True)
    with pytest.raises(UserError, match=r"belong to run 'grpo-seed0' of experiment 'qs-b' \(config bbbbbbbbbbbb\), "
                                        r"not to 'grpo-seed0' of 'qs-a' \(config aaaaaaaaaaaa\)"):
        claim_run_folder(run_dir, "qs-a", "grpo-seed0", "aaaaaaaaaaaa")
    claim_run_folder(run_dir, "qs-b", "grpo-seed0", "bbbbbbbbbbbb")  # its owner resumes


def test_a_folder_from_before_the_owner_file_is_resumed(tmp_path):
    make(tmp_path / "checkpoints", 5, complete=True)
    claim_run_folder(tmp_path, "qs", "ppo-seed0", "cccccccccccc")
    assert (tmp_path / OWNER).is_file()
