"""mlgrpo.registry: the one Registry of every name table, with one "did you mean" rule for all of them."""

from __future__ import annotations

import re

import pytest

from mlgrpo.algorithms import ESTIMATORS, GROUP_KEYS, KL_ESTIMATORS, WEIGHTINGS
from mlgrpo.algorithms.losses import LOSSES
from mlgrpo.algorithms.policy_loss import LOSS_TYPES
from mlgrpo.data.suites.base import SUITES
from mlgrpo.errors import UserError
from mlgrpo.evaluation.registry import METRICS
from mlgrpo.langid.registry import BACKENDS
from mlgrpo.registry import Registry, did_you_mean
from mlgrpo.rewards.registry import REWARDS
from mlgrpo.sampling.weights import WEIGHTS


def test_duplicates_are_a_programming_error_and_unknown_names_a_user_error():
    reg: Registry[int] = Registry("widget")
    reg.add("beta", 2)
    reg.register("alpha")(1)
    with pytest.raises(ValueError, match="widget 'alpha' is already registered"):
        reg.add("alpha", 3)
    with pytest.raises(UserError, match=r"^unknown widget 'alpah' \(did you mean 'alpha'\?\); valid widgets: alpha, beta$"):
        reg.get("alpah")
    with pytest.raises(UserError, match=r"^unknown widget 'zzz'; valid widgets: alpha, beta$"):
        reg["zzz"]
    with pytest.raises(UserError, match="unknown widget"):  # an unhashable value read from a config file
        reg.get(["alpha"])
    assert list(reg) == ["beta", "alpha"] and reg.names() == ("alpha", "beta")  # registration order; listed sorted
    assert dict(reg.items()) == {"beta": 2, "alpha": 1} and len(reg) == 2 and "alpha" in reg and [] not in reg


def test_one_spelling_rule():
    assert did_you_mean("chrF", ["chrf", "bleu"]) == "chrf"
    assert did_you_mean("dr_gpro", ["grpo", "dr_grpo"]) == "dr_grpo"
    assert did_you_mean("bleu", ["chrf", "exact_match"]) is None


# Every registry of mlgrpo, by the kind its messages name.
REGISTRIES = {"advantage estimator": ESTIMATORS, "group key": GROUP_KEYS, "KL estimator": KL_ESTIMATORS,
              "reward weighting": WEIGHTINGS, "loss": LOSSES, "loss_type": LOSS_TYPES, "suite": SUITES,
              "metric": METRICS, "language-ID backend": BACKENDS, "reward": REWARDS, "language weighting": WEIGHTS}


@pytest.mark.parametrize("kind", list(REGISTRIES))
def test_every_registry_is_one_registry_and_answers_a_typo_the_same_way(kind):
    registry = REGISTRIES[kind]
    assert isinstance(registry, Registry) and registry.kind == kind
    name = max(registry.names(), key=len)
    typo = name[:-1] if len(name) > 3 else name + "x"
    with pytest.raises(UserError) as info:
        registry.get(typo + "_?")
    message = str(info.value)
    assert message.startswith(f"unknown {kind} {typo + '_?'!r}") and "; valid " in message
    if (close := did_you_mean(typo + "_?", registry.names())) is not None:
        assert f"(did you mean {close!r}?)" in message
    assert re.search(re.escape(", ".join(registry.names())) + "$", message)
