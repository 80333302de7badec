"""Built-in suites: record shape in every suite and language, splits, imbalance, determinism,
hand-checked answers read off the packages, the project's language requirements, and errors.

Every test runs on the real package data; a suite is built once per process (in-process cache).
"""

from __future__ import annotations

import argparse
import gettext
import json
import re
import subprocess
import sys
from importlib.metadata import version

import pytest

from mlgrpo.data.records import STANDARD_FIELDS
from mlgrpo.data.suites import LANGUAGES, available_suites, language_items, load_suite
from mlgrpo.data.suites.base import SuiteSpec, is_clean, register
from mlgrpo.data.suites.ui import SKIPPED_PLURAL, catalogue_paths, item_key
from mlgrpo.errors import UserError
from mlgrpo.text import dominant_script

# Suites whose optional package is missing (gsm on Python 3.11 without its install command) skip, naming the
# command, rather than fail.
MISSING = {name: spec.missing for name, spec in available_suites().items() if spec.missing}
SUITES = [pytest.param(name, marks=pytest.mark.skipif(name in MISSING, reason=f"{name}: {MISSING.get(name)}"))
          for name in available_suites()]


def answers_of(suite: str, language: str, key: str) -> tuple[str, ...]:
    (item,) = [item for item in language_items(suite, language).items if item.key == key]
    return item.answers


# --- shape -------------------------------------------------------------------------------------


@pytest.mark.parametrize("suite", SUITES)
def test_every_language_yields_well_formed_records(suite):
    spec = available_suites()[suite]
    ids = set()
    for language in spec.languages:
        for split in ("train", "eval"):
            records = load_suite(suite, languages=[language], split=split)
            assert records, f"{suite}/{language} has no {split} records"
            for r in records:
                assert set(STANDARD_FIELDS) <= r.keys()
                assert r["id"] == f"{suite}/{language}/{r['id'].rsplit('/', 1)[1]}"
                assert (r["language"], r["task"], r["split"]) == (language, suite, split)
                assert r["reference"] == r["answers"][0]
                assert len(set(r["answers"])) == len(r["answers"]), r
                assert all(is_clean(a) for a in r["answers"]), r  # NFC, single plain spaces, non-empty
                assert r["prompt"] == f"<{language}> {spec.tag_word}: {r['item']} ->"
                assert isinstance(r["item"], str) and r["item"] and r["source"]
                ids.add(r["id"])
    total = sum(len(language_items(suite, language).items) for language in spec.languages)
    assert len(ids) == total  # ids unique, and every item is in exactly one split


def test_clean_removes_what_people_do_not_type():
    from mlgrpo.data.suites.base import clean

    assert clean("สอง\u200bร้อย") == "สองร้อย"  # CLDR's Thai word marks
    assert clean(" 14 июля 1969\u202fг. ") == "14 июля 1969 г."  # narrow no-break space
    assert clean("سه\u200cشنبه") == "سه\u200cشنبه"  # Persian ZWNJ is spelling, kept
    assert clean("e\u0301") == "é"  # NFC


# --- hand-checked answers (read off the packages' output, see the module docstrings) ------------


def test_numbers_hand_checked():
    assert answers_of("numbers", "de", "246") == ("zweihundertsechsundvierzig",)
    assert answers_of("numbers", "en", "246") == ("two hundred forty-six", "two hundred and forty-six")
    assert answers_of("numbers", "ru", "246") == ("двести сорок шесть",)
    assert answers_of("numbers", "ja", "246") == ("二百四十六",)
    assert answers_of("numbers", "ja", "101") == ("百一",)  # Japanese drops the 一 before 百
    # Chinese: CLDR's cardinal writes the zero of 101 as 零 (the reference); its counting form 〇.
    assert answers_of("numbers", "zh", "101") == ("一百零一", "一百〇一")
    # Thai: CLDR gives หนึ่ง for a final 1 (its U+200B word marks removed), num2words เอ็ด.
    assert answers_of("numbers", "th", "101") == ("หนึ่งร้อยหนึ่ง", "หนึ่งร้อยเอ็ด")
    # Arabic: CLDR (reference) attaches و, num2words separates it and writes مئتان.
    assert answers_of("numbers", "ar", "246") == ("مائتان وستة وأربعون", "مئتان و ستة و أربعون")
    assert answers_of("numbers", "sw", "246") == ("mia mbili na arobaini na sita",)  # CLDR only
    assert answers_of("numbers", "hi", "246") == ("दो सौ छियालीस",)  # CLDR only
    assert answers_of("numbers", "bn", "246") == ("দুইশত ছেচল্লিশ",)  # num2words only
    assert answers_of("numbers", "tr", "246") == ("iki yüz kırk altı", "ikiyüzkırkaltı")


def test_dates_hand_checked():
    # 1969-07-14 is item 246: 1950-01-01 + 246 * 29 days = 7134 days later. It was a Monday.
    assert answers_of("dates", "en", "1969-07-14") == ("July 14, 1969", "Monday, July 14, 1969")
    assert answers_of("dates", "de", "1969-07-14") == ("14. Juli 1969", "Montag, 14. Juli 1969")
    assert answers_of("dates", "ru", "1969-07-14")[0] == "14 июля 1969 г."  # plain space before г.
    assert answers_of("dates", "ja", "1969-07-14") == ("1969年7月14日", "1969年7月14日月曜日")
    keys = [item.key for item in language_items("dates", "en").items]
    assert keys[0] == "1950-01-01" and keys[246] == "1969-07-14" and len(keys) == 1000


def test_countries_hand_checked():
    assert answers_of("countries", "de", "DE") == ("Deutschland",)
    assert answers_of("countries", "ja", "GB") == ("イギリス", "英国")  # CLDR, then pycountry
    assert answers_of("countries", "zh", "JP") == ("日本",)
    # pycountry's Swahili catalogue has "Germany" for Germany: an English copy, not accepted.
    assert answers_of("countries", "sw", "DE") == ("Ujerumani",)
    # en: CLDR's name, then ISO's own short name where it differs (official names are not used).
    assert answers_of("countries", "en", "GB") == ("United Kingdom",)
    assert answers_of("countries", "en", "VN") == ("Vietnam", "Viet Nam")
    assert answers_of("countries", "en", "BO") == ("Bolivia", "Bolivia, Plurinational State of")


def test_ui_hand_checked():
    assert answers_of("ui", "de", item_key("Log out")) == ("Abmelden",)
    assert answers_of("ui", "ja", item_key("Save")) == ("保存",)
    # "July" is in the core catalogue (Июль) and again under a message context (genitive июля).
    assert answers_of("ui", "ru", item_key("July")) == ("Июль", "июля")
    assert answers_of("ui", "ar", item_key("This field is required.")) == ("هذا الحقل مطلوب.",)


def test_ui_skips_every_plural_entry_and_counts_them():
    plural_msgids, counted = set(), 0
    for path in catalogue_paths("de"):
        with path.open("rb") as handle:
            catalogue = gettext.GNUTranslations(handle)._catalog
        keys = [key for key in catalogue if isinstance(key, tuple) and key[1] == 0]
        plural_msgids |= {key[0] for key in keys}
        counted += len(keys)
    built = language_items("ui", "de")
    assert counted > 0 and built.notes[SKIPPED_PLURAL] == counted
    assert not plural_msgids & {item.text for item in built.items}


# --- splits, imbalance, determinism ---------------------------------------------------------------


@pytest.mark.parametrize("suite", SUITES)
def test_train_and_eval_never_share_an_item_in_any_language(suite):
    train = {r["id"].rsplit("/", 1)[1] for r in load_suite(suite, split="train")}
    held_out = {r["id"].rsplit("/", 1)[1] for r in load_suite(suite, split="eval")}
    assert train and held_out and not train & held_out


def test_eval_share_moves_items_only_from_train_to_eval():
    small = {r["item"] for r in load_suite("numbers", languages=["de"], split="eval", eval_share=0.1)}
    large = {r["item"] for r in load_suite("numbers", languages=["de"], split="eval", eval_share=0.3)}
    assert small < large
    # A hash split is binomial: 1,000 items at 0.3 give 300 +- 14.5 (one sd); 4 sd either side.
    assert 242 <= len(large) <= 358 and 62 <= len(small) <= 138


def test_per_language_counts_are_exact_and_languages_follow_them():
    records = load_suite("numbers", per_language={"en": 400, "sw": 20}, seed=1)
    counts = {lang: sum(r["language"] == lang for r in records) for lang in ("en", "sw")}
    assert counts == {"en": 400, "sw": 20} and len(records) == 420


def test_languages_not_in_per_language_keep_all_items():
    full = len(load_suite("numbers", languages=["de"]))
    records = load_suite("numbers", languages=["de", "sw"], per_language={"sw": 7})
    assert sum(r["language"] == "de" for r in records) == full
    assert sum(r["language"] == "sw" for r in records) == 7


def test_subsample_is_nested_and_the_same_items_in_every_language():
    def items(count, language, seed=0):
        return {r["item"] for r in load_suite("numbers", per_language={language: count}, seed=seed)}

    assert items(20, "sw") < items(40, "sw")
    assert items(20, "sw") == items(20, "ja")
    assert items(20, "sw", seed=0) != items(20, "sw", seed=1)


def test_same_seed_same_records():
    kwargs = dict(languages=["ar", "ko"], per_language={"ar": 30, "ko": 5}, prompt_style="instruct")
    assert load_suite("dates", seed=7, **kwargs) == load_suite("dates", seed=7, **kwargs)
    assert load_suite("dates", seed=7, **kwargs) != load_suite("dates", seed=8, **kwargs)


def test_returned_records_are_fresh_copies():
    first = load_suite("countries", languages=["he"])
    first[0]["answers"].append("changed")
    assert "changed" not in load_suite("countries", languages=["he"])[0]["answers"]


def test_prompt_styles():
    split = "eval"  # where item 246 falls
    (tag,) = [r for r in load_suite("numbers", languages=["de"], split=split) if r["item"] == "246"]
    instruct_records = load_suite("numbers", languages=["de"], split=split, prompt_style="instruct")
    (instruct,) = [r for r in instruct_records if r["item"] == "246"]
    assert tag["prompt"] == "<de> number: 246 ->"
    assert instruct["prompt"] == "Write the number 246 in words in German. Answer with the words only."


def test_fewshot_prompts_show_short_train_items_never_the_item_itself():
    from mlgrpo.data.suites.loader import FEWSHOT_EXAMPLES, fewshot_examples

    shots = fewshot_examples("ui", "de", 0.2)
    train_keys = {r["item"] for r in load_suite("ui", languages=["de"])}
    assert all(shot.text in train_keys and not set("%{}") & set(shot.text) for shot in shots)
    held_out = load_suite("ui", languages=["de"], split="eval", prompt_style="fewshot")
    first = held_out[0]
    lines = first["prompt"].split("\n")
    assert lines[-2:] == [f"English: {first['item']}", "German:"]  # the answer is the rest of the last line
    assert lines[:3] == [f"English: {shots[0].text}", f"German: {shots[0].answers[0]}", ""]
    assert first["prompt"].count("English: ") == FEWSHOT_EXAMPLES + 1
    assert len({r["prompt"].rsplit("English: ", 1)[0] for r in held_out}) == 1  # the same examples for every item
    # a train item that is itself an example gets the next one instead
    own = next(r for r in load_suite("ui", languages=["de"], prompt_style="fewshot") if r["item"] == shots[0].text)
    assert f"English: {shots[0].text}\nGerman: " not in own["prompt"].rsplit("English: ", 1)[0]
    assert own["prompt"].count("English: ") == FEWSHOT_EXAMPLES + 1


# --- the project's requirements --------------------------------------------------------------------


def test_three_families_in_twelve_languages_with_the_required_scripts():
    required = {"zh", "ja", "ar", "hi", "ru", "sw"}
    other_non_latin = {"th", "ko", "el", "he", "bn", "fa", "uk"}
    families = [spec for spec in available_suites().values() if len(spec.languages) >= 12]
    assert len(families) >= 3
    for spec in families:
        assert required <= set(spec.languages), spec.name
        assert len(other_non_latin & set(spec.languages)) >= 2, spec.name
        if spec.name in MISSING:
            continue
        # Most references are in the language's own script (ui has Latin ones such as "URL"); where they are
        # numbers (gsm), the problems are.
        for language in required - {"sw"} | other_non_latin & set(spec.languages):
            items = language_items(spec.name, language).items
            latin = sum((dominant_script(item.answers[0])[0] or dominant_script(item.text)[0]) in ("Latin", None)
                        for item in items)
            assert latin < len(items) / 2, f"{spec.name}/{language}: {latin} of {len(items)} references in Latin"


def test_suite_specs_name_their_sources_versions_and_licenses():
    for name, spec in available_suites().items():
        assert isinstance(spec, SuiteSpec) and spec.name == name and spec.description
        assert set(spec.languages) <= set(LANGUAGES)
        for source in spec.sources:
            assert source.license and (source.version == version(source.package) if source.installed
                                       else source.version == "not installed" and spec.missing)
        assert all(source.package in spec.license for source in spec.sources)


def test_registry_rejects_a_duplicate_name():
    with pytest.raises(ValueError, match="already registered"):
        register(available_suites()["numbers"])


# --- errors for people ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(name="numbrs"), r"unknown suite 'numbrs' \(did you mean 'numbers'\?\); valid suites: countries, dates, gsm, numbers"),
        (dict(name="ui", languages=["en"]), r"unknown language 'en' for suite 'ui'; valid: de, "),
        (dict(name="numbers", languages=["ko", "jp"]), r"'jp' for suite 'numbers' \(did you mean 'ja'\?\)"),
        (dict(name="dates", languages=["zh-Hans"]), r"'zh-Hans' for suite 'dates' \(did you mean 'zh'\?\)"),
        (dict(name="dates", languages=["German"]), r"\(did you mean 'de'\?\)"),
        (dict(name="numbers", split="test"), r"unknown split 'test'; valid: train, eval"),
        (dict(name="numbers", prompt_style="chat"), r"unknown prompt style 'chat'; valid: tag, instruct"),
        (dict(name="numbers", eval_share=1.0), r"eval_share must be a number between 0 and 1"),
        (dict(name="numbers", languages="de"), r"a list of codes, not the string 'de'"),
        (dict(name="numbers", languages=["de", "de"]), r"languages listed twice .*: de"),
        (dict(name="numbers", languages=["de"], per_language={"sw": 3}), r"per_language names 'sw'"),
        (dict(name="numbers", per_language={"sw": 0}), r"per_language\['sw'\] must be a whole number"),
    ],
)
def test_errors_name_the_problem_and_the_valid_choices(kwargs, message):
    with pytest.raises(UserError, match=message):
        load_suite(**kwargs)


def test_asking_more_items_than_exist_names_language_and_available_count():
    available = len(load_suite("ui", languages=["sw"]))
    expected = rf"{available} train items in 'sw'.*asks for 9999; ask for at most {available}"
    with pytest.raises(UserError, match=expected):
        load_suite("ui", per_language={"sw": 9999})


# --- the `mlgrpo suites` command ---------------------------------------------------------------------


def run_command(argv, capsys) -> str:
    from mlgrpo.commands import suites

    parser = argparse.ArgumentParser(prog="mlgrpo")
    suites.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    assert args.handler(args) == 0
    return capsys.readouterr().out


def test_command_lists_suites_with_counts(capsys):
    out = run_command(["suites"], capsys)
    for name in available_suites():
        assert f"{name}: " in out
    assert "21 languages, 21000 items" in out and "de 728" in out  # numbers; ui German


def test_command_shows_sample_records(capsys):
    out = run_command(["suites", "show", "dates", "-l", "fa", "-l", "hi", "-n", "3", "--split", "eval"], capsys)
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["language"] for r in records] == ["fa"] * 3 + ["hi"] * 3
    assert all(r["split"] == "eval" and re.match(r"<(fa|hi)> date: \d{4}-\d\d-\d\d ->$", r["prompt"]) for r in records)


def test_importing_and_listing_suites_loads_no_data_package_and_no_ml_stack():
    code = (
        "import sys; from mlgrpo.data.suites import available_suites; available_suites(); "
        "heavy = ('torch', 'transformers', 'mlflow', 'babel', 'num2words', 'unicode_rbnf', 'django', 'pycountry', "
        "'multilingual_gsm_symbolic'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
