"""What a run on several machines needs that one machine does not: checkpoints every node reaches.

With `run.backend: ray` a run may start on one node and resume on another (its node died, or another was
free first), from the checkpoints under `run.output_dir`. A folder on a machine-local disk would make that
resume start from scratch, or never find the checkpoints. So `validate` and `mlgrpo run` refuse it unless
the folder sits on a network filesystem (read from /proc/mounts) or the file declares it shared
(`run.output_shared: true`: an NFS mount /proc/mounts does not show, a bucket mounted by FUSE, ...).
Metrics, reports and views need no shared folder: they go to the tracking server.
Knows nothing about Ray or MLflow.
"""

from __future__ import annotations

import os
from pathlib import Path

from mlgrpo.errors import UserError

NETWORK_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "glusterfs",
                       "fuse.glusterfs", "fuse.cephfs", "fuse.juicefs", "fuse.gcsfuse", "fuse.s3fs", "9p", "virtiofs",
                       "wekafs", "panfs")


def filesystem_of(folder: Path, mounts: str | None = None) -> str:
    """The filesystem type of the mount that holds `folder` (the longest mount point that is its prefix).

    >>> filesystem_of(Path("/mnt/shared/runs"), "/dev/sda1 / ext4 rw 0 0\\nsrv:/x /mnt/shared nfs4 rw 0 0\\n")
    'nfs4'
    """
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "unknown"
    target = str(folder)
    best, kind = "", "unknown"
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/") or point == "/"
        if inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


def existing_parent(folder: Path) -> Path:
    """`folder` or its nearest existing parent (output_dir is created later), made absolute."""
    folder = Path(os.path.abspath(folder))
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder.resolve()


def check_shared_output(experiment, mounts: str | None = None) -> None:
    """UserError when `run.backend: ray` would keep checkpoints on one machine's disk."""
    settings = experiment.run_settings
    if settings.backend != "ray" or settings.output_shared:
        return
    folder = existing_parent(Path(settings.output_dir or Path("runs") / experiment.name))
    kind = filesystem_of(folder, mounts)
    if kind in NETWORK_FILESYSTEMS:
        return
    raise UserError(f"{experiment.path}: run.backend is ray but run.output_dir ({settings.output_dir}) is on this "
                    f"machine's {kind} disk ({folder}): a run resumed on another node would not find its "
                    "checkpoints; point run.output_dir at a folder every node mounts (NFS, a cluster filesystem) "
                    "and, if /proc/mounts does not show it as one, add run.output_shared: true")
