"""The policy-loss registry equals TRL's GRPOTrainer._compute_loss on the same batch, for every loss type.

As test_trl_parity.py does for the advantages, TRL's own `_compute_loss` (and the helpers it calls) is cut
out of the installed trl/trainer/grpo_trainer.py with `ast` and executed as it is, on an object that holds
the settings it reads and returns fixed log-probs and entropies from `_get_per_token_logps_and_entropies`.
Its accelerator is one process's (gather and reduce return their input, as accelerate's do on one
process). Loss, gradient with respect to the log-probs and logged metrics must agree to 1e-6.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import textwrap
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from mlgrpo.algorithms.policy_loss import (
    LOSS_TYPES, PolicyLossBatch, PolicyLossParams, entropy_bonus, policy_loss,
)  # fmt: skip
from mlgrpo.errors import UserError

B, T = 6, 5


def _trl_functions() -> dict:
    spec = importlib.util.find_spec("trl")  # finds the package without importing it (and transformers)
    root = Path(spec.origin).parent
    namespace: dict = {"torch": torch, "math": math, "profiling_decorator": lambda f: f}
    for relative, names in (("trainer/utils.py", {"nanmin", "nanmax"}),
                            ("trainer/grpo_trainer.py", {"_compute_loss", "get_off_policy_mask", "get_gamma_weights",
                                                         "get_high_entropy_mask"})):
        source = (root / relative).read_text(encoding="utf-8")
        found = {n.name: n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name in names}
        assert set(found) == names, f"TRL's {relative} no longer defines {sorted(names - set(found))}"
        lines = source.splitlines()
        for node in found.values():  # with its decorators (staticmethod, torch.no_grad)
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            exec(textwrap.dedent("\n".join(lines[first - 1 : node.end_lineno])), namespace)
    return namespace


TRL = _trl_functions()


class OneProcess:
    num_processes = 1
    sync_gradients = True

    def gather(self, x):
        return x

    gather_for_metrics = gather

    def reduce(self, x, reduction="sum"):
        return x

    def pad_across_processes(self, x, dim=0, pad_index=0):
        return x


class TRLLoss:
    """The attributes TRL's _compute_loss reads, set as GRPOTrainer.__init__ sets them from a GRPOConfig."""

    _compute_loss = TRL["_compute_loss"]
    get_high_entropy_mask = TRL["get_high_entropy_mask"]
    get_off_policy_mask = TRL["get_off_policy_mask"]  # staticmethods, as TRL declares them
    get_gamma_weights = TRL["get_gamma_weights"]

    def __init__(self, params: PolicyLossParams, logps, entropies, *, training, accumulation, steps_per_generation,
                 entropy_coef, top_entropy_quantile, use_vllm):
        self.loss_type, self.beta = params.loss_type, params.beta
        self.epsilon_low, self.epsilon_high = params.epsilon_low, params.epsilon_high
        self.importance_sampling_level = params.importance_sampling_level
        self.off_policy_mask_threshold = params.off_policy_threshold
        self.max_completion_length = params.max_completion_length
        self.args = SimpleNamespace(
            use_bias_correction_kl=params.bias_correction_kl, delta=params.delta, steps_per_generation=steps_per_generation,
            sapo_temperature_pos=params.sapo_temperature_pos, sapo_temperature_neg=params.sapo_temperature_neg,
            vespo_k_pos=params.vespo_k_pos, vespo_lambda_pos=params.vespo_lambda_pos, vespo_k_neg=params.vespo_k_neg,
            vespo_lambda_neg=params.vespo_lambda_neg, entropy_target=0.0,
        )
        self.top_entropy_quantile, self.entropy_coef = top_entropy_quantile, entropy_coef
        self._entropy_bonus_enabled, self.use_adaptive_entropy = entropy_coef != 0.0, False
        self.use_vllm = self.vllm_importance_sampling_correction = use_vllm
        self.aux_loss_enabled = False
        self.model = SimpleNamespace(training=training)
        self.current_gradient_accumulation_steps = accumulation
        self.accelerator = OneProcess()
        self._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
        self._logps, self._entropies = logps, entropies

    def _get_per_token_logps_and_entropies(self, model, *args, **kwargs):
        return self._logps, self._entropies, None


CASES = {  # name -> (PolicyLossParams overrides, batch and trainer options)
    "token": ({}, {}),
    "sequence": ({"importance_sampling_level": "sequence"}, {}),
    "kl": ({"beta": 0.04}, {}),
    "kl_bias_corrected": ({"beta": 0.04, "bias_correction_kl": True}, {}),
    "delta_off_policy": ({"delta": 1.3, "off_policy_threshold": 0.02, "epsilon_high": 0.28}, {}),
    "top_entropy": ({}, {"top_entropy_quantile": 0.5}),
    "vllm_weights": ({}, {"use_vllm": True}),
    "per_token_advantages": ({}, {"per_token_advantages": True}),
    "evaluation": ({"beta": 0.04}, {"training": False}),
}


def make_batch(seed: int, per_token_advantages: bool):
    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=gen, dtype=torch.float64) * 3
    logps = (old + torch.randn(B, T, generator=gen, dtype=torch.float64) * 0.3).requires_grad_(True)
    mask = torch.ones(B, T, dtype=torch.float64)
    for row, length in enumerate((5, 3, 1, 4, 5, 2)):
        mask[row, length:] = 0
    shape = (B, T) if per_token_advantages else (B,)
    advantages = torch.randn(*shape, generator=gen, dtype=torch.float64)
    return dict(logps=logps, old=old, mask=mask, advantages=advantages,
                ref=old + torch.randn(B, T, generator=gen, dtype=torch.float64) * 0.2,
                sampling=old + torch.randn(B, T, generator=gen, dtype=torch.float64) * 0.1,
                weights=torch.rand(B, T, generator=gen, dtype=torch.float64) + 0.5,
                entropies=torch.rand(B, T, generator=gen, dtype=torch.float64) * 2)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("loss_type", LOSS_TYPES.names())
def test_policy_loss_equals_trl(loss_type, case):
    overrides, options = CASES[case]
    training = options.get("training", True)
    accumulation, steps_per_generation, entropy_coef = 2, 4, 0.01
    use_vllm = options.get("use_vllm", False)
    top_q = options.get("top_entropy_quantile", 1.0)
    if loss_type == "vespo" and use_vllm:  # TRL refuses vLLM's token weights with vespo's sequence weights
        use_vllm = False
    d = make_batch(hash((loss_type, case)) % 1000, options.get("per_token_advantages", False))
    num_items = d["mask"].sum() * steps_per_generation / accumulation  # the generation batch's tokens
    params = PolicyLossParams(loss_type=loss_type, max_completion_length=T, **overrides)

    trl = TRLLoss(params, d["logps"], d["entropies"], training=training, accumulation=accumulation,
                  steps_per_generation=steps_per_generation, entropy_coef=entropy_coef, top_entropy_quantile=top_q,
                  use_vllm=use_vllm)
    inputs = {"prompt_ids": torch.zeros(B, 2, dtype=torch.long), "prompt_mask": torch.ones(B, 2),
              "completion_ids": torch.zeros(B, T, dtype=torch.long), "completion_mask": d["mask"],
              "advantages": d["advantages"], "old_per_token_logps": d["old"], "ref_per_token_logps": d["ref"],
              "sampling_per_token_logps": d["sampling"], "num_items_in_batch": num_items}
    if use_vllm:
        inputs["importance_sampling_ratio"] = d["weights"]
    expected = trl._compute_loss(None, inputs)
    expected_grad, = torch.autograd.grad(expected, d["logps"])

    scale = accumulation if training else 1.0
    step_tokens = num_items.item() * (accumulation / steps_per_generation if training else 1.0)
    params = PolicyLossParams(loss_type=loss_type, max_completion_length=T, accumulation=scale, step_tokens=step_tokens,
                              **overrides)
    entropy_mask = None
    if top_q < 1.0:  # one process: the quantile of this micro-batch's token entropies
        threshold = torch.quantile(d["entropies"][d["mask"].bool()].float(), 1 - top_q)
        entropy_mask = ((d["entropies"] * d["mask"] >= threshold) & d["mask"].bool()).to(d["mask"].dtype)
    batch = PolicyLossBatch(d["logps"], d["old"], d["advantages"], d["mask"], ref_logps=d["ref"],
                            sampling_logps=d["sampling"], importance_weights=d["weights"] if use_vllm else None,
                            entropy_mask=entropy_mask)
    loss, metrics = policy_loss(batch, params)
    bonus_mask = d["mask"] if entropy_mask is None else d["mask"] * entropy_mask
    bonus, bonus_metrics = entropy_bonus(d["entropies"], bonus_mask, entropy_coef, scale)
    total = loss + bonus
    grad, = torch.autograd.grad(total, d["logps"])

    torch.testing.assert_close(total, expected, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-6, atol=1e-6)
    logged = trl._metrics["train" if training else "eval"]
    assert metrics["policy_loss"].item() == pytest.approx(logged["policy_loss"][0], abs=1e-6)
    for name, value in metrics.items():
        if name != "policy_loss":
            assert value.item() == pytest.approx(logged[name][0], abs=1e-6), name
    assert set(logged) - set(metrics) <= {"entropy", "entropy_coef", "clip_ratio/low_min", "clip_ratio/high_max"}
    if entropy_mask is None:  # TRL logs the entropy over all completion tokens, the bonus acts on its mask's
        assert bonus_metrics["entropy"].item() == pytest.approx(logged["entropy"][0], abs=1e-6)


def test_hand_worked_dr_grpo_and_dapo():
    # Two completions, A = (1, -1), on-policy (ratio 1, so no clipping): per-token losses -1 and +1.
    # Completion 0 has 3 tokens, completion 1 has 1: masked sum = -3 + 1 = -2.
    logps = torch.zeros(2, 3)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    batch = PolicyLossBatch(logps, logps, torch.tensor([1.0, -1.0]), mask)
    value = {name: policy_loss(batch, PolicyLossParams(loss_type=name, max_completion_length=4, step_tokens=8))[0].item()
             for name in ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")}
    assert value == pytest.approx({
        "grpo": (-1 + 1) / 2,  # mean of the completions' token means: (-1, +1)
        "bnpo": -2 / 4,  # 4 tokens
        "dr_grpo": -2 / (2 * 4),  # B x max_completion_length
        "dapo": -2 / 8,  # the optimiser step's 8 tokens
        "luspo": (-3 + 1) / 2,  # mean of the completions' token sums
    })


def test_unknown_loss_type_suggests_the_closest():
    batch = PolicyLossBatch(torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1), torch.ones(1, 1))
    with pytest.raises(UserError, match="did you mean 'dr_grpo'"):
        policy_loss(batch, PolicyLossParams(loss_type="dr_gpro"))
