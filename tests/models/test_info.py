"""describe(): a saved folder's facts from JSON and safetensors headers, without torch."""

from __future__ import annotations

import pytest

from mlgrpo.errors import UserError
from mlgrpo.models.info import describe, safetensors_parameters


def test_safetensors_header_count(tmp_path):
    import torch
    from safetensors.torch import save_file

    save_file({"a": torch.zeros(2, 3), "b": torch.zeros(4), "c": torch.zeros(())}, tmp_path / "x.safetensors")
    assert safetensors_parameters(tmp_path / "x.safetensors") == 2 * 3 + 4 + 1


def test_describe_a_tiny_build(built):
    summary = describe(built[1])
    assert summary["architecture"] == "Qwen2ForCausalLM"
    assert summary["parameters"] == 23_232  # worked by hand in test_architecture.py
    assert summary["weights"] == ["model.safetensors"]
    assert summary["build"]["warm_start"]["steps"] == 5
    assert set(summary["build"]["final_exact_match"]["by_language"]) == {"en", "ja", "ru"}


def test_describe_needs_a_model_folder(tmp_path):
    with pytest.raises(UserError, match="no config.json"):
        describe(tmp_path)
