"""Estimators: hand-worked examples, plain-Python references, and the registry's rules."""

from __future__ import annotations

import random

import pytest
import torch

from mlgrpo.algorithms.estimators import ESTIMATORS, EstimatorBatch, EstimatorParams, register_estimator, whiten_tokens

NAN = float("nan")
# group 0: [1, 2, 3] (mean 2, sample std 1); group 1: [5, 5, NaN] (zero std, one unscored row); group 2: [7]
REWARDS = torch.tensor([1.0, 2.0, 3.0, 5.0, 5.0, NAN, 7.0], dtype=torch.float64)
GROUPS = torch.tensor([0, 0, 0, 1, 1, 1, 2])
PARAMS = EstimatorParams(ddof=1, eps=1e-4)


def run(name: str, scale_ids=None, rewards=REWARDS, groups=GROUPS, params=PARAMS) -> list[float]:
    return ESTIMATORS.get(name).fn(EstimatorBatch(rewards, groups, scale_ids), params).tolist()


def test_grpo_by_hand():
    # group 0: (r - 2) / (1 + 1e-4) = -0.99990001, 0, 0.99990001; zero-std group and singleton: 0; NaN: 0
    out = run("grpo", scale_ids=GROUPS)
    assert out == pytest.approx([-1 / 1.0001, 0.0, 1 / 1.0001, 0.0, 0.0, 0.0, 0.0], abs=1e-12)


def test_grpo_with_batch_scope_uses_the_std_of_all_rewards():
    # rewards without the NaN: [1, 2, 3, 5, 5, 7], mean 23/6, squared deviations sum 24.8333, /5 = 4.9667
    std = (((torch.tensor([1, 2, 3, 5, 5, 7.0]) - 23 / 6) ** 2).sum() / 5).sqrt().item()
    assert std == pytest.approx(2.228601953392904)
    out = run("grpo", scale_ids=torch.zeros(7, dtype=torch.long))
    assert out[:3] == pytest.approx([-1 / (std + 1e-4), 0.0, 1 / (std + 1e-4)])


def test_a_scope_without_spread_gives_zero_not_deviation_over_eps():
    # one group [1, 3] (deviations -1, +1) split over two single-row scopes (std 0 each): dividing the
    # deviations by eps alone would give -+10^4; there is no spread in the scope to scale by, so 0
    out = run("grpo", scale_ids=torch.tensor([0, 1]), rewards=torch.tensor([1.0, 3.0]), groups=torch.tensor([0, 0]))
    assert out == [0.0, 0.0]


def test_dr_grpo_by_hand():
    assert run("dr_grpo") == [-1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]  # r - group mean, no std


def test_rloo_by_hand():
    # row 0: 1 - mean(2, 3) = -1.5 = 3/2 * (1 - 2); group 1 has two scored rows: 5 - 5 = 0; singleton: 0
    assert run("rloo") == [-1.5, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0]


def test_rloo_matches_leave_one_out_loop():
    rng = random.Random(3)
    rewards = [rng.random() for _ in range(40)]
    groups = [rng.randrange(6) for _ in range(40)]
    expected = []
    for i, (r, g) in enumerate(zip(rewards, groups)):
        others = [rewards[j] for j in range(40) if groups[j] == g and j != i]
        expected.append(r - sum(others) / len(others) if others else 0.0)
    out = run("rloo", rewards=torch.tensor(rewards, dtype=torch.float64), groups=torch.tensor(groups))
    assert out == pytest.approx(expected, abs=1e-12)


def test_reinforce_pp_by_hand():
    # centred by group: [-1, 0, 1, 0, 0, (NaN), 0]; over the batch of scored rows: mean 0,
    # squared deviations 2, / (6 - 1) = 0.4, std 0.632456; -1 / (0.632456 + 1e-4) = -1.58089
    out = run("reinforce_pp", scale_ids=torch.zeros(7, dtype=torch.long))
    assert out == pytest.approx([-1 / (0.4**0.5 + 1e-4), 0.0, 1 / (0.4**0.5 + 1e-4), 0.0, 0.0, 0.0, 0.0])


def gae_by_hand(rewards, values, mask, gamma, lam) -> list[list[float]]:
    """Per sequence: keep the unmasked tokens, run the textbook backward recursion, put 0 elsewhere."""
    out = []
    for r, v, m in zip(rewards, values, mask):
        kept = [t for t in range(len(r)) if m[t]]
        adv = [0.0] * len(r)
        running, next_value = 0.0, 0.0
        for t in reversed(kept):
            delta = r[t] + gamma * next_value - v[t]
            running = delta + gamma * lam * running
            adv[t], next_value = running, v[t]
        out.append(adv)
    return out


def gae(rewards, values, mask, gamma, lam, scale_ids=None) -> torch.Tensor:
    as_tensor = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
    batch = EstimatorBatch(as_tensor(rewards), torch.zeros(len(rewards), dtype=torch.long), scale_ids,
                           values=as_tensor(values), mask=as_tensor(mask))
    return ESTIMATORS.get("gae").fn(batch, EstimatorParams(ddof=1, eps=0.0, gamma=gamma, lam=lam))


def test_gae_by_hand():
    rewards, values, mask = [[0.0, 0.0, 1.0]], [[0.5, 0.5, 0.5]], [[1, 1, 1]]
    # gamma = lam = 1: A_t = (sum of rewards from t) - V_t = 1 - 0.5 = 0.5 at every t
    assert gae(rewards, values, mask, 1.0, 1.0).tolist() == [[0.5, 0.5, 0.5]]
    # lam = 0.5: A_2 = 1 - 0.5 = 0.5; delta_1 = 0 + 0.5 - 0.5 = 0, A_1 = 0 + 0.5 * 0.5 = 0.25; A_0 = 0.125
    assert gae(rewards, values, mask, 1.0, 0.5).tolist() == [[0.125, 0.25, 0.5]]


def test_gae_skips_padding_inside_a_sequence():
    # token 1 is padding: A_2 = 1 - 0.25 = 0.75; A_0 = 0 + V_2 - V_0 + A_2 = 0.25 - 0.5 + 0.75 = 0.5; A_1 = 0
    out = gae([[0.0, 9.0, 1.0]], [[0.5, 99.0, 0.25]], [[1, 0, 1]], 1.0, 1.0)
    assert out.tolist() == [[0.5, 0.0, 0.75]]


def test_gae_matches_textbook_loop_on_random_sequences():
    rng = random.Random(11)
    n, t = 6, 9
    rewards = [[rng.gauss(0, 1) for _ in range(t)] for _ in range(n)]
    values = [[rng.gauss(0, 1) for _ in range(t)] for _ in range(n)]
    mask = [[int(rng.random() < 0.8) for _ in range(t)] for _ in range(n)]
    out = gae(rewards, values, mask, 0.99, 0.95)
    torch.testing.assert_close(out, torch.tensor(gae_by_hand(rewards, values, mask, 0.99, 0.95), dtype=torch.float64))


def test_gae_is_returned_unwhitened_whatever_the_scope():
    rewards, values, mask = [[0.0, 0.0, 1.0]], [[0.5, 0.5, 0.5]], [[1, 1, 1]]
    scoped = gae(rewards, values, mask, 1.0, 1.0, scale_ids=torch.zeros(1, dtype=torch.long))
    assert scoped.tolist() == [[0.5, 0.5, 0.5]]


def test_token_whitening_over_the_batch_ignores_padding():
    rng = random.Random(5)
    rewards = [[rng.gauss(0, 1) for _ in range(7)] for _ in range(4)]
    mask = [[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5, [1] * 7]
    raw = gae(rewards, rewards, mask, 1.0, 0.95)
    out = whiten_tokens(raw, torch.tensor(mask, dtype=torch.float64), torch.zeros(4, dtype=torch.long),
                        EstimatorParams(ddof=1, eps=0.0))
    kept = out[torch.tensor(mask, dtype=torch.bool)]
    assert kept.mean().item() == pytest.approx(0.0, abs=1e-12) and kept.std().item() == pytest.approx(1.0)
    assert out[~torch.tensor(mask, dtype=torch.bool)].abs().max().item() == 0.0


def test_registry_lists_every_estimator_with_its_paper():
    assert ESTIMATORS.names() == ("dr_grpo", "gae", "grpo", "reinforce_pp", "reinforce_pp_token", "rloo")
    for name in ESTIMATORS:
        spec = ESTIMATORS.get(name)
        assert spec.default_scope in spec.scopes and "arXiv" in spec.paper


def dr_grpo_twin(batch: EstimatorBatch, params: EstimatorParams):
    return batch.rewards


def test_registry_rejects_a_duplicate_name():
    with pytest.raises(ValueError, match="already registered"):
        register_estimator("grpo", scopes=("none",), default_scope="none", paper="")(dr_grpo_twin)


def reinforce_pp_token(rewards, groups, lengths, eps=0.0, ddof=1) -> list[float]:
    batch = EstimatorBatch(torch.tensor(rewards, dtype=torch.float64), torch.tensor(groups),
                           torch.zeros(len(rewards), dtype=torch.long), lengths=torch.tensor(lengths))
    return ESTIMATORS.get("reinforce_pp_token").fn(batch, EstimatorParams(ddof=ddof, eps=eps)).tolist()


def test_reinforce_pp_token_by_hand():
    # r = [0, 1, 2] in one group, T = [1, 1, 2]: c = [-1, 0, 1]; tokens -1, 0, 1, 1: mean 0.25, sample std
    # sqrt((1.5625 + 0.0625 + 2 * 0.5625) / 3) = 0.957427 -> [-1.25, -0.25, 0.75] / 0.957427
    std = ((1.5625 + 0.0625 + 2 * 0.5625) / 3) ** 0.5
    assert reinforce_pp_token([0.0, 1.0, 2.0], [0, 0, 0], [1, 1, 2]) == pytest.approx([-1.25 / std, -0.25 / std, 0.75 / std])
    # equal lengths: the per-token and per-completion whitenings agree (with ddof 0: Bessel's correction
    # counts tokens in one and completions in the other)
    per_row = run("reinforce_pp", scale_ids=torch.zeros(3, dtype=torch.long), rewards=torch.tensor([0.0, 1.0, 2.0]),
                  groups=torch.tensor([0, 0, 0]), params=EstimatorParams(ddof=0, eps=0.0))
    assert reinforce_pp_token([0.0, 1.0, 2.0], [0, 0, 0], [3, 3, 3], ddof=0) == pytest.approx(per_row)


def verl_reinforce_pp_baseline(rewards, groups, lengths) -> list[float]:
    """verl's compute_reinforce_plus_plus_baseline_outcome_advantage, as a plain loop: subtract the group
    mean (a singleton keeps its reward), broadcast to the response tokens, masked_whiten over all tokens
    with the unbiased variance and rsqrt(var + 1e-8)."""
    means = {}
    for g in set(groups):
        members = [r for r, h in zip(rewards, groups) if h == g]
        means[g] = 0.0 if len(members) == 1 else sum(members) / len(members)
    scores = [r - means[g] for r, g in zip(rewards, groups)]
    tokens = [s for s, t in zip(scores, lengths) for _ in range(t)]
    mean = sum(tokens) / len(tokens)
    var = sum((x - mean) ** 2 for x in tokens) / len(tokens) * len(tokens) / (len(tokens) - 1)
    return [(s - mean) / (var + 1e-8) ** 0.5 for s in scores]


def test_reinforce_pp_token_matches_verls_per_token_whitening():
    rng = random.Random(7)
    groups = [i // 4 for i in range(32)]  # 8 prompts x 4 samples, no singleton (verl's convention differs there)
    rewards = [rng.random() for _ in groups]
    lengths = [rng.randint(1, 20) for _ in groups]
    assert reinforce_pp_token(rewards, groups, lengths) == pytest.approx(verl_reinforce_pp_baseline(rewards, groups, lengths),
                                                                       rel=1e-6, abs=1e-7)


def test_singleton_groups_follow_the_documented_conventions():
    # Two groups: [1, 3] and the singleton [5]. grpo, dr_grpo, rloo: the singleton's centred reward is 0
    # (TRL: 0 too; verl's grpo would give 5 / (1 + eps), its rloo 5). reinforce_pp(_token): centred 0, then
    # whitened with the others: c = [-1, 1, 0], mean 0, so the singleton stays 0 here.
    rewards, groups, one = torch.tensor([1.0, 3.0, 5.0]), torch.tensor([0, 0, 1]), torch.zeros(3, dtype=torch.long)
    for name in ("grpo", "dr_grpo", "rloo"):
        assert run(name, scale_ids=groups, rewards=rewards, groups=groups)[2] == 0.0, name
    assert run("reinforce_pp", scale_ids=one, rewards=rewards, groups=groups)[2] == 0.0
    assert reinforce_pp_token([1.0, 3.0, 5.0], [0, 0, 1], [2, 2, 2])[2] == 0.0
    # a singleton whitened against a batch whose centred mean is not 0 is not 0: (0 - mean) / std
    shifted = reinforce_pp_token([1.0, 3.0, 5.0], [0, 0, 1], [1, 3, 2])  # tokens -1, 1, 1, 1, 0, 0: mean 1/3
    assert shifted[2] < 0 and shifted[2] == pytest.approx(-(1 / 3) / torch.tensor([-1.0, 1, 1, 1, 0, 0]).std().item())


def test_reinforce_pp_token_needs_lengths_and_gives_zero_to_empty_rows():
    with pytest.raises(ValueError, match="lengths"):
        ESTIMATORS.get("reinforce_pp_token").fn(EstimatorBatch(torch.ones(2), torch.zeros(2, dtype=torch.long),
                                                               torch.zeros(2, dtype=torch.long)), PARAMS)
    out = reinforce_pp_token([0.0, 1.0, 2.0, NAN], [0, 0, 0, 0], [2, 0, 2, 3])
    assert out[1] == 0.0 and out[3] == 0.0 and out[0] == pytest.approx(-out[2])
