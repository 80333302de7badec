"""compute_advantages: invariances, bad rewards, metrics, and the options composed end to end."""

from __future__ import annotations

import random

import pytest
import torch

from mlgrpo.algorithms import AdvantageConfig, GroupKeys, compute_advantages, per_completion_advantage
from mlgrpo.errors import UserError

NAN, INF = float("nan"), float("inf")
LANGS = ("en", "zh", "sw")


def make_batch(seed: int, languages=LANGS, prompts: int = 12, g: int = 6) -> tuple[torch.Tensor, GroupKeys]:
    rng = random.Random(seed)
    rows = [(f"{lang}-{p}", lang) for p in range(prompts) for lang in [rng.choice(languages)] for _ in range(g)]
    scores = [rng.choice([0.0, 1.0]) if rng.random() < 0.5 else rng.random() for _ in rows]  # pass/fail or graded
    rewards = torch.tensor(scores, dtype=torch.float64)
    keys = GroupKeys.from_rows([p for p, _ in rows], [lang for _, lang in rows], lengths=[len(p) * 7 for p, _ in rows],
                               completion_lengths=[len(p) * 3 for p, _ in rows])
    return rewards, keys


def permuted(keys: GroupKeys, perm: torch.Tensor) -> GroupKeys:
    k = keys
    return GroupKeys(k.prompt_ids[perm], k.lang_ids[perm], k.languages, k.prompt_hashes[perm], k.lengths[perm],
                     k.completion_lengths[perm])


def test_with_one_language_language_scoped_grpo_is_plain_grpo():
    rewards, keys = make_batch(0, languages=("de",))
    plain = compute_advantages(rewards, keys, AdvantageConfig()).advantages
    in_language = compute_advantages(rewards, keys, AdvantageConfig(group_by="prompt_in_language")).advantages
    torch.testing.assert_close(in_language, plain, rtol=0, atol=0)
    by_language = compute_advantages(rewards, keys, AdvantageConfig(std_scope="language")).advantages
    by_batch = compute_advantages(rewards, keys, AdvantageConfig(std_scope="batch")).advantages
    torch.testing.assert_close(by_language, by_batch, rtol=0, atol=0)


@pytest.mark.parametrize("scope", ["group", "language"])
def test_shifting_or_scaling_one_language_changes_nothing(scope):
    rewards, keys = make_batch(1)
    zh = keys.lang_ids == keys.languages.index("zh")
    assert zh.any() and (~zh).any()
    cfg = AdvantageConfig(std_scope=scope, eps=0.0)  # eps breaks scale invariance by design (~eps / std)
    before = compute_advantages(rewards, keys, cfg).advantages
    after = compute_advantages(torch.where(zh, 10.0 * rewards - 3.0, rewards), keys, cfg).advantages
    torch.testing.assert_close(after, before, rtol=1e-12, atol=1e-12)
    # with TRL's eps the change stays at the eps / std level
    default = AdvantageConfig(std_scope=scope)
    shifted = torch.where(zh, 10.0 * rewards - 3.0, rewards)
    diff = compute_advantages(shifted, keys, default).advantages - compute_advantages(rewards, keys, default).advantages
    assert diff.abs().max().item() < 1e-3


def test_batch_scaling_is_not_language_invariant():
    # the contrast that shows the invariance test above can fail: one std for the whole batch mixes scales
    rewards, keys = make_batch(1)
    zh = keys.lang_ids == keys.languages.index("zh")
    cfg = AdvantageConfig(std_scope="batch", eps=0.0)
    before = compute_advantages(rewards, keys, cfg).advantages
    after = compute_advantages(torch.where(zh, 10.0 * rewards, rewards), keys, cfg).advantages
    assert (after - before).abs().max().item() > 0.1


@pytest.mark.parametrize(
    "cfg",
    [
        AdvantageConfig(),
        AdvantageConfig(estimator="rloo", group_by="prompt_in_language"),
        AdvantageConfig(estimator="reinforce_pp", std_scope="language"),
        AdvantageConfig(group_by="prompt_hash_bucket", hash_buckets=4, temperature_start=1.0, temperature_end=0.5),
        AdvantageConfig(group_by="length_bucket", length_edges=(20, 30), mix_lambda=0.5),
    ],
)
def test_row_order_does_not_matter(cfg):
    rewards, keys = make_batch(2)
    rewards[3] = NAN
    perm = torch.randperm(len(rewards), generator=torch.Generator().manual_seed(0))
    a = compute_advantages(rewards, keys, cfg, step=3, total_steps=10)
    b = compute_advantages(rewards[perm], permuted(keys, perm), cfg, step=3, total_steps=10)
    torch.testing.assert_close(a.advantages[perm], b.advantages)
    for name, value in a.metrics.items():
        torch.testing.assert_close(value, b.metrics[name], equal_nan=True, msg=name)


def test_zero_std_groups_and_bad_rewards_give_finite_advantages_and_are_counted():
    # prompt a: constant; prompt b: NaN, inf, 1, 0; prompt c: a single scored row
    rewards = torch.tensor([0.5, 0.5, 0.5, NAN, INF, 1.0, 0.0, -INF, NAN, 2.0])
    keys = GroupKeys.from_rows(["a"] * 3 + ["b"] * 4 + ["c"] * 3, ["en"] * 7 + ["zh"] * 3)
    for cfg in (AdvantageConfig(), AdvantageConfig(eps=0.0), AdvantageConfig(estimator="rloo")):
        result = compute_advantages(rewards, keys, cfg)
        assert torch.isfinite(result.advantages).all()
        assert result.advantages[[0, 1, 2, 3, 4, 7, 8, 9]].abs().max().item() == 0.0
        m = result.metrics
        assert m["adv/nonfinite_rewards"].item() == 4.0  # two NaN (no reward), inf and -inf
        # scored rows per group: a = [0.5] * 3 (zero std), b = [1, 0], c = [2] (a singleton, std 0)
        assert (m["adv/groups"].item(), m["adv/zero_std_groups"].item(), m["adv/singleton_groups"].item()) == (3, 2, 1)
        # per language, the share of rows in a group without spread: en = a's 3 of its 7 rows, zh = c's 3 of 3
        assert m["adv/frac_zero_std/en"].item() == pytest.approx(3 / 7) and m["adv/frac_zero_std/zh"].item() == 1.0
        assert m["adv/nonfinite_advantages"].item() == 0.0


def test_multi_objective_gives_each_objective_its_own_baseline():
    rewards, keys = make_batch(3)
    helpful = torch.rand(len(rewards), dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 10
    both = torch.stack([rewards, helpful], dim=1)  # columns: safety, helpfulness
    alpha = 0.3
    combined = compute_advantages(both, keys, AdvantageConfig(objective_weights=(alpha, 1 - alpha))).advantages
    safety = compute_advantages(rewards, keys, AdvantageConfig()).advantages
    helpfulness = compute_advantages(helpful, keys, AdvantageConfig()).advantages
    torch.testing.assert_close(combined, alpha * safety + (1 - alpha) * helpfulness)


def test_metrics_are_zero_dim_tensors_with_per_language_names():
    rewards, keys = make_batch(4)
    result = compute_advantages(rewards, keys, AdvantageConfig(inter_group_coef=0.1, group_by="language"))
    for lang in keys.languages:
        assert f"adv/mean/{lang}" in result.metrics and f"adv/std/{lang}" in result.metrics
    assert all(v.dim() == 0 for v in result.metrics.values())
    # group by language with per-prompt rewards: group means differ, so the regulariser is positive
    assert result.regularizer.item() == pytest.approx(0.1 * result.metrics["adv/inter_group_var"].item())
    en = keys.lang_ids == keys.languages.index("en")
    assert result.metrics["adv/mean/en"].item() == pytest.approx(result.advantages[en].mean().item())


def test_gae_through_the_entry_point():
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    values = torch.full((2, 3), 0.5)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    keys = GroupKeys.from_rows(["p", "q"], ["en", "en"])
    cfg = AdvantageConfig(estimator="gae", gamma=1.0, lam=1.0)
    result = compute_advantages(rewards, keys, cfg, values=values, mask=mask)
    # row 0: 1 - 0.5 at every token; row 1: A_1 = 2 - 0.5 = 1.5, A_0 = 0 + 0.5 - 0.5 + 1.5 = 1.5, pad 0
    assert result.advantages.tolist() == [[0.5, 0.5, 0.5], [1.5, 1.5, 0.0]]
    with pytest.raises(UserError, match="values= and mask="):
        compute_advantages(rewards, keys, AdvantageConfig(estimator="gae"))


def test_gae_metrics_use_the_per_completion_advantage_of_the_completions_table():
    # Issue 25: adv/* summed a completion's token advantages while the completions table took their mean.
    # The advantages above are [[0.5, 0.5, 0.5], [1.5, 1.5, pad]]: per completion 0.5 and 1.5 (not 1.5 and 3).
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    keys = GroupKeys.from_rows(["p", "q"], ["en", "en"])
    cfg = AdvantageConfig(estimator="gae", gamma=1.0, lam=1.0)
    result = compute_advantages(rewards, keys, cfg, values=torch.full((2, 3), 0.5), mask=mask)
    assert per_completion_advantage(result.advantages, result.mask).tolist() == [0.5, 1.5]
    assert result.metrics["adv/mean"].item() == pytest.approx(1.0)
    assert result.metrics["adv/abs_mean"].item() == pytest.approx(1.0)
    assert result.metrics["adv/std"].item() == pytest.approx(0.5)
    assert result.metrics["adv/mean/en"].item() == pytest.approx(1.0)


def test_shape_errors_say_what_to_do():
    rewards, keys = make_batch(5)
    with pytest.raises(UserError, match="objective_weights"):
        compute_advantages(torch.stack([rewards, rewards], 1), keys, AdvantageConfig())
    with pytest.raises(UserError, match="group keys describe"):
        compute_advantages(rewards[:-1], keys, AdvantageConfig())
    with pytest.raises(UserError, match="2 weights"):
        compute_advantages(torch.stack([rewards] * 3, 1), keys, AdvantageConfig(objective_weights=(0.5, 0.5)))


@pytest.mark.parametrize(
    "cfg",
    [
        AdvantageConfig(),
        AdvantageConfig(estimator="rloo", group_by="prompt_in_language"),
        AdvantageConfig(estimator="reinforce_pp", std_scope="language", group_by="length_bucket"),
        AdvantageConfig(group_by="prompt_hash_bucket", temperature_start=1.0, temperature_end=0.5, mix_lambda=0.5,
                        inter_group_coef=0.1, objective_weights=(0.3, 0.7)),
        AdvantageConfig(estimator="gae", std_scope="batch"),
    ],
)
def test_entry_point_never_reads_values_back_on_an_accelerator(cfg):
    # Meta tensors have no data: any read back to the host (.item(), a Python bool of a tensor, boolean
    # indexing) raises. Advantages and every metric stay on the device until the trainer logs them.
    n, t = 64, 5
    ids = lambda: torch.empty(n, dtype=torch.long, device="meta")  # noqa: E731
    keys = GroupKeys(ids(), ids(), ("en", "zh"), prompt_hashes=ids(), lengths=ids(), completion_lengths=ids())
    shape = (n, t) if cfg.spec.per_token else (n, 2) if cfg.objective_weights else (n,)
    per_token = {"values": torch.empty(n, t, device="meta"), "mask": torch.empty(n, t, device="meta")}
    result = compute_advantages(torch.empty(shape, device="meta"), keys, cfg, step=1, total_steps=10,
                                **(per_token if cfg.spec.per_token else {}))
    assert result.advantages.device.type == "meta"
    assert result.advantages.shape == ((n, t) if cfg.spec.per_token else (n,))
    assert all(v.device.type == "meta" and v.dim() == 0 for v in result.metrics.values())
