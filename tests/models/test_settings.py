"""TinySettings: validation that says what is wrong, `tiny:<options>` parsing, and the cache key."""

from __future__ import annotations

import dataclasses

import pytest

from mlgrpo.errors import UserError
from mlgrpo.models.settings import TinySettings, folder_name, parse_options, settings_key, to_options


def test_options_are_typed_by_field():
    settings = parse_options("seed=3, languages=en+sw+ja, learning_rate=5e-4, train_per_language=none")
    assert settings.seed == 3
    assert settings.languages == ("en", "sw", "ja")
    assert settings.learning_rate == 0.0005
    assert settings.train_per_language is None
    assert parse_options("") == TinySettings()


def test_unknown_option_names_the_closest_valid_one():
    with pytest.raises(UserError, match="unknown tiny option 'hiden_size'; did you mean 'hidden_size'"):
        parse_options("hiden_size=64")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("seed", "has no value"),
        ("seed=one", "seed='one': expected int"),
        ("languages=en+en", "repeats a code"),
        ("target_exact_match=0.7", "target_exact_match"),
        ("hidden_size=30,num_heads=4", "not divisible"),
        ("max_steps=0", "max_steps must be at least 1"),
    ],
)
def test_bad_options_are_user_errors(options, message):
    with pytest.raises(UserError, match=message):
        parse_options(options)


def test_to_options_round_trips():
    settings = TinySettings(seed=7, languages=("ru", "sw"), hidden_size=64, learning_rate=3e-4)
    assert parse_options(to_options(settings)) == settings
    assert to_options(TinySettings()) == ""


def test_key_changes_with_every_setting_and_only_then():
    base = TinySettings()
    assert settings_key(base) == settings_key(TinySettings())
    changed = {
        "suite": "dates", "languages": ("en",), "seed": 1, "prompt_style": "instruct", "train_per_language": 10,
        "vocab_size": 512, "hidden_size": 64, "num_layers": 1, "num_heads": 2, "intermediate_size": 128,
        "max_positions": 64, "learning_rate": 1e-4, "batch_size": 8, "warmup_steps": 0, "max_steps": 10,
        "check_every": 2, "target_exact_match": 0.2, "saturated_exact_match": 0.7, "eval_per_language": 8,
        "final_eval_per_language": 10,
    }  # fmt: skip
    assert set(changed) == {f.name for f in dataclasses.fields(TinySettings)}, "a new field needs a line here"
    keys = {settings_key(dataclasses.replace(base, **{name: value})) for name, value in changed.items()}
    assert len(keys) == len(changed) and settings_key(base) not in keys


def test_folder_name_shows_suite_and_key():
    settings = TinySettings(suite="dates")
    assert folder_name(settings) == f"tiny-dates-{settings_key(settings)}"
    assert len(settings_key(settings)) == 16
