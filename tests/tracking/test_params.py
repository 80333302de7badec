"""A config as MLflow params: flattened, cut to MLflow's limits with a note, secrets masked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlgrpo.tracking.params import MAX_KEY, MAX_PARAM_VALUE, flatten_params, safe_key, safe_tags


@dataclass
class Sampling:
    temperature: float = 0.7
    languages: tuple = ("en", "ja")


def test_nested_config_flattens_to_dotted_keys():
    config = {
        "name": "quickstart",
        "arms": [{"name": "grpo", "lr": 2e-4}, {"name": "ppo", "lr": 1e-4}],
        "languages": ["en", "ja", "sw"],
        "sampling": Sampling(),
        "output": Path("/runs/q"),
        "seed": 0, "bf16": False, "max_steps": None, "empty": {},
    }
    assert flatten_params(config) == {
        "name": "quickstart",
        "arms.0.name": "grpo", "arms.0.lr": "0.0002", "arms.1.name": "ppo", "arms.1.lr": "0.0001",
        "languages": '["en", "ja", "sw"]',
        "sampling.temperature": "0.7", "sampling.languages": '["en", "ja"]',
        "output": "/runs/q",
        "seed": "0", "bf16": "false", "max_steps": "null", "empty": "{}",
    }


def test_long_values_are_cut_to_mlflow_limit_with_the_full_length():
    flat = flatten_params({"prompt_template": "x" * 7000, "fits": "y" * MAX_PARAM_VALUE})
    assert len(flat["prompt_template"]) == MAX_PARAM_VALUE
    assert flat["prompt_template"].endswith("... [cut: 7000 characters]")
    assert flat["fits"] == "y" * MAX_PARAM_VALUE


def test_secrets_are_masked_by_key_and_inside_uris(reliability):
    flat = flatten_params({
        "tracking": {"uri": "https://bob:pa55@mlflow.corp:443", "token": "t-123"},
        "hub": {"api_key": "k", "HF_TOKEN": "hf_abc", "token_budget": ""},
        "data": {"url": "https://host/data.jsonl?sig=XYZ&part=1"},
    })
    assert flat["tracking.uri"] == "https://bob:***@mlflow.corp:443"
    assert flat["tracking.token"] == "***" and flat["hub.api_key"] == "***" and flat["hub.HF_TOKEN"] == "***"
    assert flat["hub.token_budget"] == ""  # nothing to hide
    assert flat["data.url"] == "https://host/data.jsonl?sig=***&part=1"
    assert not any(secret in "".join(flat.values()) for secret in ("pa55", "t-123", "hf_abc", "XYZ"))
    reliability.record("security", "credentials in URIs and secret keys masked in params", "passed", tried=5)


def test_keys_are_made_valid_and_short():
    assert safe_key("reward fn (v2)") == "reward fn _v2_"
    long = "a." * 200
    key = safe_key(long)
    assert len(key) == MAX_KEY and key != safe_key("b." * 200)


def test_tags_get_the_same_care():
    tags = safe_tags({"tracking_uri": "http://u:p@h:1", "password": "x", "seed": 3})
    assert tags == {"tracking_uri": "http://u:***@h:1", "password": "***", "seed": "3"}


def test_secret_keys_are_masked_but_not_words_that_contain_them():
    from mlgrpo.tracking.params import flatten_params

    flat = flatten_params({"evaluation": {"max_new_tokens": 24}, "hub_token": "hf_x", "api_key": "k", "password": "p"})
    assert flat["evaluation.max_new_tokens"] == "24"
    assert flat["hub_token"] == flat["api_key"] == flat["password"] == "***"
