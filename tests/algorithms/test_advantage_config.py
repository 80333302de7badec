"""AdvantageConfig: broken combinations are rejected with a reason; defaults are TRL's."""

from __future__ import annotations

import pytest

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.errors import UserError


def test_std_scope_none_means_the_estimators_convention():
    assert AdvantageConfig().scale_scope == "group"  # advantage normalisation on by default
    assert AdvantageConfig(estimator="dr_grpo").scale_scope == "none"
    assert AdvantageConfig(estimator="reinforce_pp").scale_scope == "batch"
    assert AdvantageConfig(std_scope="none").scale_scope == "none"  # normalisation off


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"estimator": "grop"}, "did you mean 'grpo'"),
        ({"group_by": "langauge"}, "did you mean 'language'"),
        ({"std_scope": "global"}, "not one of group, language, batch, none"),
        ({"estimator": "dr_grpo", "std_scope": "group"}, "Dr. GRPO"),
        ({"estimator": "reinforce_pp", "std_scope": "none"}, "admits batch, language"),
        ({"ddof": 2}, "ddof"),
        ({"eps": -1.0}, "eps"),
        ({"temperature_start": 1.0}, "set both temperature_start and temperature_end"),
        ({"temperature_start": 1.0, "temperature_end": 0.0}, "> 0"),
        ({"mix_lambda": 1.5}, r"\[0, 1\]"),
        ({"length_edges": (64, 32)}, "strictly increasing"),
        ({"hash_buckets": 0}, "hash_buckets"),
        ({"objective_weights": ()}, "non-empty"),
        ({"inter_group_coef": -0.1}, "inter_group_coef"),
        ({"estimator": "gae", "mix_lambda": 0.5}, "per-token advantages, but mix_lambda"),
        ({"estimator": "gae", "lam": 1.5}, "gamma and lam"),
    ],
)
def test_broken_combinations_say_why(kwargs, message):
    with pytest.raises(UserError, match=message):
        AdvantageConfig(**kwargs)


def test_params_carry_the_numbers_estimators_read():
    cfg = AdvantageConfig(ddof=0, eps=1e-6, estimator="gae", gamma=0.99, lam=0.9)
    assert (cfg.params.ddof, cfg.params.eps, cfg.params.gamma, cfg.params.lam) == (0, 1e-6, 0.99, 0.9)
