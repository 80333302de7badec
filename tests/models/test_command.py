"""`mlgrpo model build-tiny | info`: arguments reach the library, results reach stdout, errors are one line."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from mlgrpo.commands import model as command
from mlgrpo.errors import UserError
from mlgrpo.models.settings import TinySettings, to_options


def _run(*argv: str) -> int:
    # The `model` command is registered the way mlgrpo.cli registers every command module.
    parser = argparse.ArgumentParser(prog="mlgrpo")
    command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.handler(args)


def dataclass_without(settings, *names):
    """`settings` with `names` back at their defaults, so that the command line must supply them."""
    return dataclasses.replace(settings, **{name: getattr(TinySettings(), name) for name in names})


def test_build_tiny_reuses_the_cached_build_and_prints_its_facts(built, tiny_settings, capsys):
    options = to_options(dataclass_without(tiny_settings, "languages", "seed"))
    code = _run("model", "build-tiny", "--languages", "en,ja,ru", "--seed", "0", "--options", options,
                "--out", str(built[0]))
    out, err = capsys.readouterr()
    assert code == 0
    assert err.strip() == f"re-using {built[1]}"
    assert out.startswith(f"{built[1]}\n  Qwen2ForCausalLM: 1 layers, hidden 32, vocab 400, 23,232 parameters")
    assert "warm start: 5 SFT steps" in out and "stopped by threshold" in out


def test_info_json(built, capsys):
    assert _run("model", "info", str(built[1]), "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["parameters"] == 23_232 and summary["build"]["settings"]["languages"] == ["en", "ja", "ru"]


def test_info_text_lists_samples_per_language(built, capsys):
    _run("model", "info", str(built[1]))
    out = capsys.readouterr().out
    for language in ("en", "ja", "ru"):
        assert out.count(f"<{language}> number:") == 3


def test_bad_option_is_a_user_error(built):
    with pytest.raises(UserError, match="unknown tiny option 'layers'; did you mean 'num_layers'"):
        _run("model", "build-tiny", "--options", "layers=2", "--out", str(built[0]))
