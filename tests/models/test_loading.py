"""load_policy: tiny specs, local folders and hub ids; safetensors only; errors that say what to do."""

from __future__ import annotations

import json
import shutil

import pytest

from mlgrpo.errors import UserError
from mlgrpo.models.loading import classify_spec, load_policy, prepare_tokenizer
from mlgrpo.models.settings import to_options


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("tiny", ("tiny", "")),
        ("tiny:seed=2,languages=en+sw", ("tiny", "seed=2,languages=en+sw")),
        ("Qwen/Qwen2.5-0.5B-Instruct", ("hub", "Qwen/Qwen2.5-0.5B-Instruct")),
        ("gpt2", ("hub", "gpt2")),
        ("./runs/model", ("local", "runs/model")),
        ("/no/such/model", ("local", "/no/such/model")),
        ("runs/a/model", ("local", "runs/a/model")),
    ],
)
def test_classify_spec(spec, expected):
    assert classify_spec(spec) == expected


def test_spec_that_is_nothing_is_an_error():
    with pytest.raises(UserError, match="neither 'tiny"):
        classify_spec("not a model id!")


def test_load_a_built_folder_ready_for_generation(built):
    import torch

    model, tokenizer = load_policy(str(built[1]))
    assert type(model).__name__ == "Qwen2ForCausalLM" and model.dtype == torch.float32
    assert tokenizer.padding_side == "left" and tokenizer.pad_token == "<|pad|>"
    assert model.generation_config.pad_token_id == tokenizer.pad_token_id
    batch = tokenizer(["<en> number: 7 ->", "<ja> number: 123 ->"], return_tensors="pt", padding=True)
    prompt_length = batch["input_ids"].shape[1]
    out = model.generate(**batch, max_new_tokens=3, do_sample=False)
    assert out.shape[0] == 2 and prompt_length < out.shape[1] <= prompt_length + 3
    assert (out[:, :prompt_length] == batch["input_ids"]).all()  # left padding keeps prompts in place


def test_tiny_spec_reuses_the_cached_build(built, tiny_settings, monkeypatch):
    from safetensors.torch import load_file

    monkeypatch.setenv("MLGRPO_CACHE", str(built[0].parent))
    before = sorted(p.name for p in built[0].iterdir())
    model, _ = load_policy("tiny:" + to_options(tiny_settings))
    assert sorted(p.name for p in built[0].iterdir()) == before  # nothing built
    saved = load_file(built[1] / "model.safetensors")
    assert all(model.state_dict()[name].equal(tensor) for name, tensor in saved.items())


def test_dtype_by_name(built):
    import torch

    model, _ = load_policy(str(built[1]), dtype="bfloat16")
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    model, _ = load_policy(str(built[1]), dtype="auto")  # the checkpoint's own: saved in float32
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    with pytest.raises(UserError, match="unknown dtype 'float13'"):
        load_policy(str(built[1]), dtype="float13")


def test_missing_local_folder(tmp_path):
    with pytest.raises(UserError, match=r"model folder .*nope does not exist"):
        load_policy(str(tmp_path / "nope"))


def test_folder_without_config(tmp_path):
    with pytest.raises(UserError, match="has no config.json"):
        load_policy(str(tmp_path))


def test_pickled_weights_are_refused(built, tmp_path):
    import torch
    from safetensors.torch import load_file

    folder = tmp_path / "pickled"
    shutil.copytree(built[1], folder)
    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    with pytest.raises(UserError, match="reads only safetensors"):
        load_policy(str(folder))


def test_uncached_hub_model_offline_says_so():
    # tests/conftest.py sets HF_HUB_OFFLINE=1 before huggingface_hub is imported.
    with pytest.raises(UserError, match="not in the local Hugging Face cache .* no network"):
        load_policy("mlgrpo-tests/not-a-cached-model")


def test_prepare_tokenizer_pads_with_eos_when_there_is_no_pad(built):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(built[1])
    tokenizer.pad_token = None
    tokenizer.padding_side = "right"
    prepare_tokenizer(tokenizer)
    assert tokenizer.pad_token == tokenizer.eos_token and tokenizer.padding_side == "left"
    tokenizer.pad_token = tokenizer.eos_token = None
    with pytest.raises(UserError, match="neither a pad nor an EOS token"):
        prepare_tokenizer(tokenizer, "test-model")


def test_build_info_is_not_needed_to_load(built, tmp_path):
    # Any saved transformers folder loads; build_info.json only describes mlgrpo's own builds.
    folder = tmp_path / "plain"
    shutil.copytree(built[1], folder)
    (folder / "build_info.json").unlink()
    model, _ = load_policy(str(folder))
    assert json.loads((folder / "config.json").read_text())["model_type"] == model.config.model_type


def test_another_tokenizer_reaches_the_model_and_a_larger_one_is_refused(built, tmp_path):
    from transformers import AutoTokenizer

    own = AutoTokenizer.from_pretrained(built[1])
    own.model_max_length = 77  # a mark that only the copy carries
    own.save_pretrained(tmp_path / "marked")
    _, tokenizer = load_policy(str(built[1]), tokenizer=str(tmp_path / "marked"))
    assert tokenizer.model_max_length == 77 and tokenizer.padding_side == "left"
    rows = len(own)
    own.add_tokens([f"<extra{i}>" for i in range(rows)])  # ids beyond the model's embedding rows
    own.save_pretrained(tmp_path / "larger")
    with pytest.raises(UserError, match=r"has \d+ tokens but model .* embeds only \d+; use the model's own tokenizer"):
        load_policy(str(built[1]), tokenizer=str(tmp_path / "larger"))
