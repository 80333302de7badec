"""The examples in the tracking modules' docstrings run and give what they show."""

from __future__ import annotations

import doctest

import pytest

from mlgrpo.tracking import datasets, names, params, uris, views


@pytest.mark.parametrize("module", [names, params, uris, datasets, views], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
