"""The on-disk cache of built models: where it is, when a folder is complete, and atomic publishing.

A model folder is complete when its build_info.json names the expected key and every file listed
in its manifest is present with the recorded SHA-256. A folder is built under a temporary name in
the same parent and renamed into place, so a crash never leaves a half-written folder under the
final name, and two processes building the same key both end up with one complete folder.
Knows nothing about what the files contain or how they were made.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

BUILD_INFO = "build_info.json"


def default_models_dir() -> Path:
    """$MLGRPO_CACHE/models, else $XDG_CACHE_HOME/mlgrpo/models, else ~/.cache/mlgrpo/models."""
    from mlgrpo.runtime import cache_dir

    return cache_dir("models")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_manifest(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under `folder` except build_info.json, by relative POSIX path."""
    return {
        path.relative_to(folder).as_posix(): sha256_file(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != BUILD_INFO
    }


def read_build_info(folder: Path) -> dict | None:
    """The folder's build_info.json, or None when it is missing or unreadable."""
    try:
        return json.loads((folder / BUILD_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_complete(folder: Path, key: str) -> bool:
    """True when `folder` holds a finished build for `key` whose files are all intact."""
    info = read_build_info(folder)
    if not info or info.get("key") != key or not isinstance(info.get("files"), dict):
        return False
    for name, digest in info["files"].items():
        path = folder / name
        if not path.is_file() or sha256_file(path) != digest:
            return False
    return True


@contextlib.contextmanager
def staging(parent: Path, name: str) -> Iterator[Path]:
    """A fresh temporary folder beside the final one (same filesystem, so rename is atomic).

    Removed when the block raises; on success the caller publishes it with `publish`.
    """
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{name}-", dir=parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def publish(tmp: Path, final: Path, key: str, *, replace: bool = False) -> Path:
    """Rename the finished `tmp` to `final`, replacing an incomplete `final` (any `final` if `replace`).

    If another process published a complete folder for the same key first, that one is kept and
    ours is discarded: both are builds of the same settings.
    """
    if final.exists():
        if not replace and is_complete(final, key):
            shutil.rmtree(tmp)
            return final
        trash = Path(tempfile.mkdtemp(prefix=f".trash-{final.name}-", dir=final.parent))
        os.replace(final, trash / final.name)
        shutil.rmtree(trash, ignore_errors=True)
    try:
        os.replace(tmp, final)
    except OSError:  # a concurrent build renamed its folder in between
        if not is_complete(final, key):
            raise
        shutil.rmtree(tmp)
    return final
