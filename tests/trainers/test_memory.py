"""The memory model: its exact terms by hand, and the fit recovering constants it was given."""

from __future__ import annotations

import math

import pytest

from mlgrpo.models.shape import Counts
from mlgrpo.trainers.memory import Coefficients, Fit, Workload, estimate, terms

SHAPE = Counts(parameters=1000, backbone=900, largest=400, lora=10, layers=2, hidden=8, vocab=100, kv_width=4)
WORK = dict(weight_bytes=4, rollout=8, micro_batch=4, prompt_tokens=6, completion_tokens=10)
COEF = Coefficients(base=500.0, per_vocab=2.0, activation=3.0, largest_copies=1.5)


FULL = Counts(**{**SHAPE.__dict__, "lora": 0})


def test_grpo_full_fine_tuning_by_hand():
    t = terms(FULL, Workload(algorithm="grpo", critic=None, **WORK), COEF)
    assert t["weights"] == 4000 and t["gradients"] == 4000 and t["optimizer"] == 8000  # fp32: 4 + 4 + 2 x 4
    assert t["critic"] == 0 and t["frozen_copies"] == 0
    assert t["kv_cache"] == 2 * 2 * 4 * 4 * 8 * 16  # K and V, 2 layers, kv width 4, 4 bytes, 8 rows x 16 tokens
    assert t["activations"] == 3.0 * 2 * 8 * 4 * 16  # one graph: layers x hidden x (4 rows x 16 tokens)
    assert t["process"] == 500.0 + 2.0 * 100  # the process and the tokenizer's 100 entries
    assert t["transients"] == 1.5 * 400 * 4  # copies of the largest tensor (400 elements, fp32) of one trained model
    assert estimate(FULL, Workload(algorithm="grpo", critic=None, **WORK), COEF) == sum(t.values())


def test_each_critic_costs_what_it_holds():
    grpo = terms(FULL, Workload(algorithm="grpo", critic=None, **WORK), COEF)
    head = (8 + 1) * 4 * 4  # a linear head: weights, gradients, two AdamW moments, float32
    for critic, cost in (("separate", 900 * 16 + head), ("head", head), ("lora", 10 * 16 + head)):
        ppo = terms(FULL if critic != "lora" else SHAPE, Workload(algorithm="ppo", critic=critic, **WORK), COEF)
        assert ppo["critic"] == cost
        assert ppo["activations"] == 2 * grpo["activations"]  # the critic's graph beside the policy's
    # transients of the largest tensor: the policy's; twice with a head (two losses into one backbone); a
    # separate critic's own too; none for LoRA (the frozen base has no gradient)
    transients = {critic: terms(FULL, Workload(algorithm="ppo", critic=critic, **WORK), COEF)["transients"]
                  for critic in ("separate", "head")}
    assert transients == {"separate": 1.5 * 400 * (4 + 4), "head": 1.5 * 400 * 8}
    assert terms(SHAPE, Workload(algorithm="ppo", critic="lora", **WORK), COEF)["transients"] == 0


def test_lora_trains_only_the_adapter_in_float32_over_a_bf16_base():
    t = terms(SHAPE, Workload(algorithm="grpo", critic=None, **{**WORK, "weight_bytes": 2}), COEF)
    assert t["weights"] == 1000 * 2 + 10 * 4  # the frozen base in bf16, the adapter in float32
    assert t["gradients"] == 10 * 4 and t["optimizer"] == 2 * 10 * 4


def test_frozen_copies_for_a_reference_and_for_evaluation():
    t = terms(FULL, Workload(algorithm="grpo", critic=None, reference=True, eval_copy=True, **WORK), COEF)
    assert t["frozen_copies"] == 2 * 4000


def test_fit_recovers_the_constants_that_made_the_points():
    from bench._memory_fit import Point, fit_memory

    true = Coefficients(base=7e8, per_vocab=900.0, activation=40.0, largest_copies=2.0)
    points = []
    # vocabularies that differ between sizes, so that any three sizes pin every constant down
    for i, (layers, hidden, vocab) in enumerate([(2, 128, 30000), (4, 256, 1000), (9, 512, 50000), (18, 640, 262144)]):
        body = layers * hidden * hidden * 12
        for lora in (0, layers * hidden * 32):
            shape = Counts(parameters=body + vocab * hidden, backbone=body + vocab * hidden, largest=vocab * hidden,
                           lora=lora, layers=layers, hidden=hidden, vocab=vocab, kv_width=hidden)
            for algorithm, critic in (("grpo", None), ("ppo", "separate"), ("ppo", "lora" if lora else "head")):
                work = Workload(algorithm=algorithm, critic=critic, **WORK)
                points.append(Point(f"size{i}", f"{algorithm}-{critic}-{lora}", shape, work, estimate(shape, work, true)))
    fit = fit_memory(points, command="test", day="today")
    assert fit.cpu.base == pytest.approx(true.base, rel=1e-6)
    assert fit.cpu.activation == pytest.approx(true.activation, rel=1e-6)
    assert fit.cpu.per_vocab == pytest.approx(true.per_vocab, rel=1e-6)
    assert fit.cpu.largest_copies == pytest.approx(true.largest_copies, rel=1e-6)
    assert fit.max_error < 1e-9 and fit.cross_validated_max_error < 1e-6 and len(fit.cross_validated) == 4
    again = Fit.from_json(fit.to_json())
    assert again == fit and again.gpu().base == 0.0


def test_fit_never_returns_a_negative_constant():
    from bench._memory_fit import Point, solve

    shape = Counts(parameters=100, backbone=100, largest=40, lora=0, layers=1, hidden=4, vocab=10, kv_width=4)
    work = Workload(algorithm="grpo", critic=None, **WORK)
    # measurements below the exact terms: the unconstrained fit would make the process term negative
    points = [Point("s", "a", shape, work, float(m)) for m in (100.0, 120.0)]
    coef = solve(points)
    assert min(coef.base, coef.per_vocab, coef.activation, coef.largest_copies) >= 0 and not math.isnan(coef.base)


def test_sharding_divides_what_the_engine_shards_by_the_ranks():
    # 4 ranks; the policy 4000 B of fp32 weights, 4000 of gradients, 8000 of AdamW; the separate critic
    # (900 + 9 elements) x 4 B x (1 + 1 + 2)
    plain = terms(FULL, Workload(algorithm="ppo", critic="separate", reference=True, eval_copy=True, **WORK), COEF)
    sharded = {stages: terms(FULL, Workload(algorithm="ppo", critic="separate", reference=True, eval_copy=True,
                                            shards=4, sharded=stages, reference_sharded=True, **WORK), COEF)
               for stages in (("optimizer",), ("optimizer", "gradients"), ("optimizer", "gradients", "weights"))}
    zero1, zero2, full = sharded.values()
    assert zero1["optimizer"] == 8000 / 4 and zero1["gradients"] == 4000 and zero1["weights"] == 4000
    assert zero2["gradients"] == 4000 / 4 and zero2["weights"] == 4000
    assert full["weights"] == full["gradients"] == 1000 and full["optimizer"] == 2000
    assert full["critic"] == (900 + 9) * 4 * 4 / 4 and zero1["critic"] == (900 + 9) * 4 * (1 + 1 + 2 / 4)
    # the reference model is sharded with the weights (TRL prepares it); the evaluation copy is a plain one
    assert full["frozen_copies"] == 4000 / 4 + 4000 and zero2["frozen_copies"] == plain["frozen_copies"] == 8000
    # what each rank computes on is its own: activations, KV cache, the largest tensor all-gathered whole
    for key in ("activations", "kv_cache", "transients", "process"):
        assert full[key] == plain[key]
