"""build_tiny end to end at test size: what the folder holds, and the same seed giving the same weights."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mlgrpo.models.cache import BUILD_INFO, file_manifest
from mlgrpo.models.settings import settings_key
from mlgrpo.models.tiny import build_tiny, split_records


def _weights(folder):
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def _equal(first: dict, second: dict) -> bool:
    import torch

    return first.keys() == second.keys() and all(torch.equal(first[name], second[name]) for name in first)


def test_folder_holds_safetensors_tokenizer_and_build_info(built, tiny_settings):
    folder = built[1]
    names = {p.name for p in folder.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", BUILD_INFO} <= names
    assert not [n for n in names if n.endswith((".bin", ".pt", ".pkl"))]
    info = json.loads((folder / BUILD_INFO).read_text(encoding="utf-8"))
    assert info["key"] == settings_key(tiny_settings)
    assert info["settings"]["languages"] == ["en", "ja", "ru"]
    assert info["files"] == file_manifest(folder)
    # Target 0: the first check (step 5) stops the warm start.
    assert info["warm_start"]["steps"] == 5 and info["warm_start"]["stopped_by"] == "threshold"
    assert [c["step"] for c in info["warm_start"]["checks"]] == [5]
    assert set(info["final_exact_match"]["by_language"]) == {"en", "ja", "ru"}
    assert {lang: len(s) for lang, s in info["samples"].items()} == {"en": 3, "ja": 3, "ru": 3}
    assert info["versions"]["trl"] and info["wall_seconds"] > 0


def test_same_seed_same_weights_other_seed_other_weights(built, tiny_settings, tmp_path):
    again = build_tiny(tiny_settings, models_dir=tmp_path / "again")
    assert _equal(_weights(built[1]), _weights(again))
    assert (built[1] / "tokenizer.json").read_bytes() == (again / "tokenizer.json").read_bytes()
    other = build_tiny(dataclasses.replace(tiny_settings, seed=1), models_dir=tmp_path / "other")
    assert not _equal(_weights(built[1]), _weights(other))


def test_warm_start_changed_the_initial_weights(built, tiny_settings):
    from transformers import AutoTokenizer

    from mlgrpo.models.architecture import init_model

    fresh = init_model(tiny_settings, AutoTokenizer.from_pretrained(built[1])).state_dict()
    trained = _weights(built[1])
    changed = [name for name in trained if not fresh[name].equal(trained[name])]
    assert len(changed) == len(trained)  # 5 SFT steps with Adam move every tensor


def test_samples_do_not_overlap_and_follow_the_settings(tiny_settings):
    train, heldout, final = split_records(tiny_settings)
    assert len(train) == 3 * tiny_settings.train_per_language
    assert len(heldout) == 3 * tiny_settings.eval_per_language
    assert len(final) == 3 * tiny_settings.final_eval_per_language
    ids = [r["id"] for r in heldout + final]
    assert len(set(ids)) == len(ids)
    assert {r["split"] for r in heldout + final} == {"eval"} and {r["split"] for r in train} == {"train"}


def test_unknown_language_is_a_user_error(tiny_settings, tmp_path):
    from mlgrpo.errors import UserError

    with pytest.raises(UserError, match="xx"):
        build_tiny(dataclasses.replace(tiny_settings, languages=("en", "xx")), models_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []  # the staging folder was removed


def test_pairs_longer_than_the_context_stop_the_build(tiny_settings, tmp_path):
    from mlgrpo.errors import UserError

    with pytest.raises(UserError, match=r"training pair numbers/\w+/\d+ is \d+ tokens long, more than max_positions 8"):
        build_tiny(dataclasses.replace(tiny_settings, max_positions=8), models_dir=tmp_path)
