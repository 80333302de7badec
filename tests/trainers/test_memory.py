"""The memory model: its exact terms by hand, and the fit recovering constants it was given."""

from __future__ import annotations

import math

import pytest

from mlgrpo.models.shape import Counts
from mlgrpo.trainers.memory import Coefficients, Fit, Workload, estimate, terms

SHAPE = Counts(parameters=1000, backbone=900, lora=10, layers=2, hidden=8, vocab=100, kv_width=4)
WORK = dict(weight_bytes=4, rollout=8, micro_batch=4, prompt_tokens=6, completion_tokens=10)
COEF = Coefficients(base=500.0, activation=3.0, logit_copies=2.0)


FULL = Counts(**{**SHAPE.__dict__, "lora": 0})


def test_grpo_full_fine_tuning_by_hand():
    t = terms(FULL, Workload(algorithm="grpo", critic=None, **WORK), COEF)
    assert t["weights"] == 4000 and t["gradients"] == 4000 and t["optimizer"] == 8000  # fp32: 4 + 4 + 2 x 4
    assert t["critic"] == 0 and t["frozen_copies"] == 0
    assert t["kv_cache"] == 2 * 2 * 4 * 4 * 8 * 16  # K and V, 2 layers, kv width 4, 4 bytes, 8 rows x 16 tokens
    assert t["activations"] == 3.0 * 2 * 8 * 4 * 16  # one graph: layers x hidden x (4 rows x 16 tokens)
    assert t["logits"] == 2.0 * 4 * 4 * 10 * 100  # 2 float32 (4 x 10, 100) tensors
    assert estimate(FULL, Workload(algorithm="grpo", critic=None, **WORK), COEF) == sum(t.values())


def test_each_critic_costs_what_it_holds():
    grpo = terms(FULL, Workload(algorithm="grpo", critic=None, **WORK), COEF)
    head = (8 + 1) * 4 * 4  # a linear head: weights, gradients, two AdamW moments, float32
    for critic, cost in (("separate", 900 * 16 + head), ("head", head), ("lora", 10 * 16 + head)):
        ppo = terms(FULL if critic != "lora" else SHAPE, Workload(algorithm="ppo", critic=critic, **WORK), COEF)
        assert ppo["critic"] == cost
        assert ppo["activations"] == 2 * grpo["activations"]  # the critic's graph beside the policy's


def test_lora_trains_only_the_adapter_in_float32_over_a_bf16_base():
    t = terms(SHAPE, Workload(algorithm="grpo", critic=None, **{**WORK, "weight_bytes": 2}), COEF)
    assert t["weights"] == 1000 * 2 + 10 * 4  # the frozen base in bf16, the adapter in float32
    assert t["gradients"] == 10 * 4 and t["optimizer"] == 2 * 10 * 4


def test_frozen_copies_for_a_reference_and_for_evaluation():
    t = terms(FULL, Workload(algorithm="grpo", critic=None, reference=True, eval_copy=True, **WORK), COEF)
    assert t["frozen_copies"] == 2 * 4000


def test_fit_recovers_the_constants_that_made_the_points():
    from bench._memory_fit import Point, fit_memory

    true = Coefficients(base=7e8, activation=40.0, logit_copies=3.0)
    points = []
    # vocabularies that differ between sizes, so that any three sizes pin every constant down
    for i, (layers, hidden, vocab) in enumerate([(2, 128, 30000), (4, 256, 1000), (9, 512, 50000), (18, 640, 262144)]):
        shape = Counts(parameters=layers * hidden * hidden * 12, backbone=layers * hidden * hidden * 12,
                       lora=layers * hidden * 32, layers=layers, hidden=hidden, vocab=vocab, kv_width=hidden)
        for algorithm, critic in (("grpo", None), ("ppo", "separate"), ("ppo", "lora")):
            work = Workload(algorithm=algorithm, critic=critic, **WORK)
            points.append(Point(f"size{i}", f"{algorithm}-{critic}", shape, work, estimate(shape, work, true)))
    fit = fit_memory(points, command="test", day="today")
    assert fit.cpu.base == pytest.approx(true.base, rel=1e-6)
    assert fit.cpu.activation == pytest.approx(true.activation, rel=1e-6)
    assert fit.cpu.logit_copies == pytest.approx(true.logit_copies, rel=1e-6)
    assert fit.max_error < 1e-9 and fit.cross_validated_max_error < 1e-6 and len(fit.cross_validated) == 4
    again = Fit.from_json(fit.to_json())
    assert again == fit and again.gpu().base == 0.0


def test_fit_never_returns_a_negative_constant():
    from bench._memory_fit import Point, solve

    shape = Counts(parameters=100, backbone=100, lora=0, layers=1, hidden=4, vocab=10, kv_width=4)
    work = Workload(algorithm="grpo", critic=None, **WORK)
    # measurements below the exact terms: the unconstrained fit would make the process term negative
    points = [Point("s", "a", shape, work, float(m)) for m in (100.0, 120.0)]
    coef = solve(points)
    assert min(coef.base, coef.activation, coef.logit_copies) >= 0 and not math.isnan(coef.base)
