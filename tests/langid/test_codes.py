from __future__ import annotations

import os
import re

import pytest

from mlgrpo.errors import UserError
from mlgrpo.langid.codes import KNOWN_CODES, canonical, parse_candidates, parse_code


@pytest.mark.parametrize(
    ("label", "code"),
    [("zh-cn", "zh"), ("zh-tw", "zh"), ("yue", "zh"), ("NB", "no"), ("iw", "he"), ("de", "de"), ("ceb", None), ("xx", None)],
)
def test_canonical_maps_backend_labels_to_iso_639_1(label, code):
    assert canonical(label) == code


@pytest.mark.parametrize(
    ("text", "code"),
    [("pt-BR", "pt"), ("zh_Hans", "zh"), (" DE ", "de"), ("nb", "no"), ("deu", "de"), ("chi", "zh"), ("nob", "no")],
)
def test_parse_code_drops_subtags_and_maps_three_letter_codes(text, code):
    assert parse_code(text) == code


def test_unknown_code_names_the_value_and_the_closest_codes():
    with pytest.raises(UserError) as err:
        parse_code("dx")
    message = str(err.value)
    assert "'dx'" in message and "did you mean da, de, dv?" in message and " fr " in message
    with pytest.raises(UserError, match=re.escape("'German': did you mean de?")):
        parse_code("German")


def test_candidates_must_be_a_non_empty_list_of_known_codes():
    assert parse_candidates(None) is None
    assert parse_candidates(["de", "pt-BR", "de"]) == frozenset({"de", "pt"})
    with pytest.raises(UserError, match="not the string 'de,fr'"):
        parse_candidates("de,fr")
    with pytest.raises(UserError, match="empty"):
        parse_candidates([])
    with pytest.raises(UserError, match="'klingon'"):
        parse_candidates(["de", "klingon"])


def test_every_two_letter_label_of_every_library_is_known():
    # KNOWN_CODES is spelled out so that checking a code loads no model: it must not drift from the
    # libraries' own label lists.
    from langdetect.detector_factory import PROFILES_DIRECTORY
    from lingua import Language

    from mlgrpo.langid.models import fasttext_model

    fasttext_labels, _ = fasttext_model().predict("", k=-1, threshold=-1.0)
    labels = [label.removeprefix("__label__") for label in fasttext_labels]
    assert len(labels) == 176
    labels = [label for label in labels if len(label) == 2]
    labels += [language.iso_code_639_1.name for language in Language.all()]
    labels += os.listdir(PROFILES_DIRECTORY)
    unknown = sorted({label for label in labels if canonical(label) is None})
    assert unknown == []
    assert len(KNOWN_CODES) > 100
