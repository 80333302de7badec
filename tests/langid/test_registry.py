from __future__ import annotations

import pytest

from mlgrpo.errors import UserError
from mlgrpo.langid.registry import BACKENDS, Backend, Sample, get_backend, register


def test_every_backend_is_registered_once_under_its_name():
    assert sorted(BACKENDS) == ["default", "fasttext", "langdetect", "lingua", "ngram", "script"]
    assert all(name == backend.name for name, backend in BACKENDS.items())


def test_a_second_backend_with_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="'lingua' is already registered"):
        register(Backend("lingua", "an impostor", frozenset, lambda sample, candidates: []))
    assert BACKENDS["lingua"].summary.startswith("lingua")


def test_unknown_names_get_the_closest_valid_one():
    with pytest.raises(UserError, match="'langdetct' \\(did you mean 'langdetect'\\?\\); valid backends: default, fasttext"):
        get_backend("langdetct")
    with pytest.raises(UserError, match="'zzz'; valid backends"):
        get_backend("zzz")


def test_sample_computes_script_shares_once():
    sample = Sample("Hello Привет")
    assert sample.shares is sample.shares
    assert set(sample.shares) == {"Latin", "Cyrillic"}
