"""The examples in the report modules' docstrings run and give what they show."""

from __future__ import annotations

import doctest

import pytest

from mlgrpo.reports import conclusions, improvement, settings


@pytest.mark.parametrize("module", [conclusions, improvement, settings], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
