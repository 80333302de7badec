"""`run.backend: ray` needs checkpoints every node reaches: the filesystem of run.output_dir, from /proc/mounts."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mlgrpo.errors import UserError
from mlgrpo.experiments.cluster import check_shared_output, filesystem_of
from mlgrpo.experiments.fields import FieldError
from mlgrpo.experiments.sections import RunSettings

MOUNTS = ("/dev/sda1 / ext4 rw 0 0\n"
          "fileserver:/export /mnt/shared nfs4 rw 0 0\n"
          "/dev/sdb1 /mnt/shared/local-cache xfs rw 0 0\n"
          "lustre@tcp:/fs /lustre lustre rw 0 0\n")


def experiment(output_dir: str, backend: str = "ray", shared: bool = False):
    return SimpleNamespace(path=Path("exp.yaml"), name="exp",
                           run_settings=RunSettings(output_dir=output_dir, backend=backend, output_shared=shared))


@pytest.mark.parametrize("folder,kind", [("/mnt/shared/runs/x", "nfs4"), ("/mnt/shared/local-cache/runs", "xfs"),
                                         ("/mnt/sharedness", "ext4"), ("/lustre/u/runs", "lustre"), ("/", "ext4")])
def test_the_longest_mount_point_holding_the_folder_decides(folder, kind):
    assert filesystem_of(Path(folder), MOUNTS) == kind


@pytest.fixture
def mounts(tmp_path):
    """A mount table in which tmp_path/shared is NFS and tmp_path/shared/cache a local disk again."""
    (tmp_path / "shared" / "cache").mkdir(parents=True)
    (tmp_path / "local").mkdir()
    return (f"/dev/sda1 / ext4 rw 0 0\nfileserver:/export {tmp_path}/shared nfs4 rw 0 0\n"
            f"/dev/sdb1 {tmp_path}/shared/cache xfs rw 0 0\n")


def test_ray_with_a_local_output_dir_is_refused_in_one_line_naming_the_fix(tmp_path, mounts):
    folder = f"{tmp_path}/shared/cache/runs/x"  # not created yet: its nearest existing parent decides
    with pytest.raises(UserError) as info:
        check_shared_output(experiment(folder), mounts)
    message = str(info.value)
    assert f"run.backend is ray but run.output_dir ({folder}) is on this machine's xfs disk" in message
    assert "run.output_shared: true" in message and "\n" not in message
    with pytest.raises(UserError, match="ext4 disk"):
        check_shared_output(experiment(f"{tmp_path}/local/runs"), mounts)


def test_a_network_filesystem_a_declared_share_or_the_local_backend_pass(tmp_path, mounts):
    check_shared_output(experiment(f"{tmp_path}/shared/runs/x"), mounts)
    check_shared_output(experiment(f"{tmp_path}/local/runs", shared=True), mounts)
    check_shared_output(experiment(f"{tmp_path}/local/runs", backend="local"), mounts)


def test_run_settings_check_the_new_fields():
    assert RunSettings().gpus_per_run is None and RunSettings().backend == "local"
    with pytest.raises(FieldError, match="backend: must be one of local, ray, got 'rya' \\(did you mean 'ray'\\?\\)"):
        RunSettings(backend="rya")
    with pytest.raises(FieldError, match="gpus_per_run: must be >= 0"):
        RunSettings(gpus_per_run=-1)
