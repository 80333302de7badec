"""Package borders and the shared registry."""

from __future__ import annotations

import sys

import pytest

from mlgrpo.algorithms.registry import Registry
from mlgrpo.errors import UserError




def test_registry_rejects_duplicates_and_suggests_the_closest_name():
    reg: Registry[int] = Registry("widget")
    reg.add("alpha", 1)
    reg.add("beta", 2)
    with pytest.raises(ValueError, match="widget 'alpha' is already registered"):
        reg.add("alpha", 3)
    with pytest.raises(UserError, match="unknown widget 'alpah' \\(did you mean 'alpha'\\?\\); valid widgets: alpha, beta"):
        reg.get("alpah")
    with pytest.raises(UserError) as info:
        reg.get("zzz")
    assert "did you mean" not in str(info.value)
    assert reg.get("beta") == 2 and list(reg) == ["alpha", "beta"] and "alpha" in reg


def test_docstring_examples_hold():
    import doctest

    import mlgrpo.algorithms  # noqa: F401  (loads the modules below)

    for name in ("mlgrpo.algorithms.group_stats", "mlgrpo.algorithms.shaping", "mlgrpo.algorithms.kl",
                 "mlgrpo.algorithms.ppo", "mlgrpo.algorithms.weighting"):
        result = doctest.testmod(sys.modules[name])
        assert result.attempted > 0 and result.failed == 0, name
