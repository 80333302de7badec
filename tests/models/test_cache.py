"""The model cache: complete folders are re-used untouched, broken ones rebuilt, publishing is atomic."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from mlgrpo.models.cache import BUILD_INFO, default_models_dir, is_complete, publish, staging
from mlgrpo.models.settings import settings_key
from mlgrpo.models.tiny import build_tiny


@pytest.fixture(scope="module")
def key(tiny_settings):
    return settings_key(tiny_settings)


def _copy(built, tmp_path):
    """A private copy of the test build (the shared one must stay intact)."""
    models_dir = tmp_path / "models"
    shutil.copytree(built[0], models_dir)
    return models_dir, models_dir / built[1].name


def test_second_call_reuses_the_folder_without_training(built, tiny_settings):
    models_dir, folder = built
    stamp = (folder.stat().st_ino, (folder / "model.safetensors").stat().st_mtime_ns)
    messages = []
    assert build_tiny(tiny_settings, models_dir=models_dir, progress=messages.append) == folder
    assert messages == [f"re-using {folder}"]
    assert (folder.stat().st_ino, (folder / "model.safetensors").stat().st_mtime_ns) == stamp


def _truncate_weights(folder):
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[:100])


def _drop_build_info(folder):
    (folder / BUILD_INFO).unlink()


def _drop_tokenizer(folder):
    (folder / "tokenizer.json").unlink()


def _other_key(folder):
    info = json.loads((folder / BUILD_INFO).read_text(encoding="utf-8"))
    (folder / BUILD_INFO).write_text(json.dumps({**info, "key": "0" * 16}), encoding="utf-8")


@pytest.mark.parametrize("damage", [_truncate_weights, _drop_build_info, _drop_tokenizer, _other_key])
def test_damaged_folders_are_incomplete(built, key, tmp_path, damage):
    _, folder = _copy(built, tmp_path)
    assert is_complete(folder, key)
    damage(folder)
    assert not is_complete(folder, key)


def test_a_damaged_cache_folder_is_rebuilt(built, tiny_settings, key, tmp_path):
    models_dir, folder = _copy(built, tmp_path)
    _truncate_weights(folder)
    messages = []
    assert build_tiny(tiny_settings, models_dir=models_dir, progress=messages.append) == folder
    assert messages[0] == f"building {folder}"
    assert is_complete(folder, key)
    assert (folder / "model.safetensors").read_bytes() == (built[1] / "model.safetensors").read_bytes()
    assert sorted(p.name for p in models_dir.iterdir()) == [folder.name]  # no staging or trash left


def test_force_rebuilds_a_complete_folder(built, tiny_settings, key, tmp_path):
    models_dir, folder = _copy(built, tmp_path)
    inode = folder.stat().st_ino
    assert build_tiny(tiny_settings, models_dir=models_dir, force=True) == folder
    assert folder.stat().st_ino != inode and is_complete(folder, key)


def _finished(parent, name, key, payload):
    """A staged folder as a build leaves it: one file and a build_info.json that lists it."""
    with staging(parent, name) as tmp:
        (tmp / "weights").write_text(payload)
        info = {"key": key, "files": {"weights": hashlib.sha256(payload.encode()).hexdigest()}}
        (tmp / BUILD_INFO).write_text(json.dumps(info))
    return tmp


def test_publish_replaces_an_incomplete_folder(tmp_path):
    final = tmp_path / "m"
    final.mkdir()
    (final / "half-written").write_text("x")
    assert publish(_finished(tmp_path, "m", "k", "new"), final, "k") == final
    assert (final / "weights").read_text() == "new" and not (final / "half-written").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["m"]


def test_publish_keeps_a_complete_folder_that_another_process_published_first(tmp_path):
    final = publish(_finished(tmp_path, "m", "k", "first"), tmp_path / "m", "k")
    publish(_finished(tmp_path, "m", "k", "second"), final, "k")
    assert (final / "weights").read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["m"]
    publish(_finished(tmp_path, "m", "k", "third"), final, "k", replace=True)
    assert (final / "weights").read_text() == "third"


def test_staging_is_removed_when_the_build_fails(tmp_path):
    with pytest.raises(RuntimeError), staging(tmp_path, "m") as tmp:
        (tmp / "partial").write_text("x")
        raise RuntimeError("training failed")
    assert list(tmp_path.iterdir()) == []


def test_default_models_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("MLGRPO_CACHE", str(tmp_path / "c"))
    assert default_models_dir() == tmp_path / "c" / "models"
    monkeypatch.delenv("MLGRPO_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_models_dir() == tmp_path / "xdg" / "mlgrpo" / "models"
