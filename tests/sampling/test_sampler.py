import copy
import dataclasses

import numpy as np
import pytest
import torch

from mlgrpo.errors import UserError
from mlgrpo.sampling import LanguageSampler, SamplerConfig

from .conftest import ROWS
from .layout import generation_batches

G, B = 4, 8  # completions per prompt, prompts per generation batch


def hard(index: int) -> bool:
    """Every tenth row is 'hard': its completions earn 0, the others 1."""
    return index % 10 == 0


def draw(sampler: LanguageSampler, prompts: int, *, with_rewards: bool = False) -> np.ndarray:
    """Iterate epochs until `prompts` prompts are drawn; optionally report rewards after each batch."""
    drawn, per_batch = [], sampler.batch_size * sampler.mini_repeat_count * sampler.repeat_count
    while sum(map(len, drawn)) < prompts:
        iterator = iter(sampler)
        for _ in range(len(sampler) // per_batch):
            block = [next(iterator) for _ in range(per_batch)]
            drawn.append(generation_batches(block, mini_repeat_count=sampler.mini_repeat_count,
                                            batch_size=sampler.batch_size, repeat_count=sampler.repeat_count)[0])
            if with_rewards:
                sampler.update_rewards(block, [0.0 if hard(i) else 1.0 for i in block])
        assert next(iterator, None) is None, "the epoch is longer than len(sampler)"
    return np.concatenate(drawn)[:prompts]


# Targets on 600 en / 150 ru / 30 sw rows (780; an epoch is 776 draws, 97 batches of 8), worked by hand.
SQRT = {"en": 600**0.5, "ru": 150**0.5, "sw": 30**0.5}
CAPPED_SW = 3 * 30 / 776  # sw x5 would weigh 150/900; 3 repeats of 30 rows in 776 draws allow 90/776
CASES = {
    "uniform": (SamplerConfig(), {"en": 600 / 780, "ru": 150 / 780, "sw": 30 / 780}),
    "balanced": (SamplerConfig(name="balanced"), dict.fromkeys(ROWS, 1 / 3)),
    "temperature": (SamplerConfig(name="temperature", alpha=0.5), {k: v / sum(SQRT.values()) for k, v in SQRT.items()}),
    "oversample": (
        SamplerConfig(name="oversample", oversample={"sw": 5.0}, max_repeats_per_item=3),
        {"en": 600 / 750 * (1 - CAPPED_SW), "ru": 150 / 750 * (1 - CAPPED_SW), "sw": CAPPED_SW},
    ),
    "balanced+reward buckets": (SamplerConfig(name="balanced", reward_buckets=2), dict.fromkeys(ROWS, 1 / 3)),
}


@pytest.mark.parametrize("case", CASES)
def test_language_shares_over_10000_draws_are_within_2_points_of_the_target(case, languages):
    config, expected = CASES[case]
    sampler = LanguageSampler(languages, config, mini_repeat_count=G, batch_size=B)
    assert sampler.target == pytest.approx(expected)
    drawn = draw(sampler, 10_000, with_rewards=config.reward_buckets > 0)
    labels = np.array(languages)[drawn]
    for lang, target in expected.items():
        assert abs((labels == lang).mean() - target) < 0.02, lang
    counts = sampler.language_counts()  # counts every prompt handed out, including past the first 10,000
    assert sum(counts.values()) >= 10_000 and set(counts) == set(ROWS)
    assert all(abs(counts[lang] / sum(counts.values()) - expected[lang]) < 0.02 for lang in ROWS)


def test_language_counts_are_the_languages_drawn(languages):
    sampler = LanguageSampler(languages, SamplerConfig(name="balanced"), mini_repeat_count=G, batch_size=B)
    drawn = draw(sampler, 776)  # exactly one epoch
    labels = np.array(languages)[drawn]
    assert sampler.language_counts() == {lang: int((labels == lang).sum()) for lang in ROWS}


@pytest.mark.parametrize("case", CASES)
def test_the_same_seed_gives_the_same_order_and_another_seed_another(case, languages):
    config = CASES[case][0]
    other = dataclasses.replace(config, seed=config.seed + 1)
    runs = [
        draw(LanguageSampler(languages, c, mini_repeat_count=G, batch_size=B), 2000, with_rewards=c.reward_buckets > 0)
        for c in (config, config, other)
    ]
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


@pytest.mark.parametrize("mini_repeat_count, batch_size, repeat_count", [(4, 8, 1), (2, 3, 2), (8, 1, 3)])
def test_index_layout_is_trls(mini_repeat_count, batch_size, repeat_count, languages):
    sampler = LanguageSampler(languages, SamplerConfig(name="balanced"), mini_repeat_count=mini_repeat_count,
                              batch_size=batch_size, repeat_count=repeat_count)
    indices = list(sampler)
    assert len(indices) == len(sampler) == (780 // batch_size) * batch_size * mini_repeat_count * repeat_count
    generation_batches(indices, mini_repeat_count=mini_repeat_count, batch_size=batch_size,
                       repeat_count=repeat_count)


def test_uniform_epoch_of_one_draw_per_row_is_a_permutation(languages):
    # 780 rows, batches of 6: 130 full batches, so every row is drawn exactly once per epoch
    sampler = LanguageSampler(languages, SamplerConfig(), mini_repeat_count=2, batch_size=6)
    for _ in range(2):
        assert sorted(list(sampler)[::2]) == list(range(780))


def test_rows_of_a_language_are_drawn_evenly(languages):
    # balanced: sw gets 776 / 3 ~ 258.7 draws per epoch from 30 rows; rows are drawn in passes,
    # so after any number of draws two sw rows differ by at most one draw
    sampler = LanguageSampler(languages, SamplerConfig(name="balanced"), mini_repeat_count=1, batch_size=B)
    lang = np.array(languages)
    for _ in range(3):
        list(sampler)
        for name in ROWS:
            counts = sampler._item_draws[lang == name]
            assert counts.max() - counts.min() <= 1, name


def test_repeat_cap_holds_per_row(languages):
    # balanced with at most 3 repeats: sw's share is pinned at 3 * 30 / 776, which is 90 draws per epoch,
    # so in 4 epochs each sw row is drawn exactly 3 * 4 = 12 times
    sampler = LanguageSampler(languages, SamplerConfig(name="balanced", max_repeats_per_item=3),
                              mini_repeat_count=G, batch_size=B)
    drawn = draw(sampler, 4 * 776)
    sw_counts = np.bincount(drawn, minlength=780)[np.array(languages) == "sw"]
    assert sw_counts.tolist() == [12] * 30


def test_repeat_cap_holds_in_reward_buckets_too(languages):
    # sw's 3 hard rows form a bucket that an even split would give half of sw's draws: about 166 draws
    # each over 4 epochs. Capped at 3 per epoch, the expectation is 12; buckets are split again after
    # every batch, so rounding adds a little noise around it.
    config = SamplerConfig(name="balanced", reward_buckets=2, max_repeats_per_item=3)
    drawn = draw(LanguageSampler(languages, config, mini_repeat_count=G, batch_size=B), 4 * 776, with_rewards=True)
    sw_counts = np.bincount(drawn, minlength=780)[np.array(languages) == "sw"]
    assert sw_counts.max() <= 15 and sw_counts.sum() == 4 * 90


def test_reward_buckets_balance_hard_and_easy_prompts(languages):
    # 10% of rows are hard (reward 0). With two reward buckets, once every prompt of a language has been
    # seen, its hard and easy prompts are each drawn half the time; without buckets, 10% of the time.
    lang = np.array(languages)

    def hard_share_once_all_seen(config):
        # 32 prompts per batch: a step's rewards redraw the rest of the epoch, 4x fewer steps keep this fast
        sampler = LanguageSampler(languages, config, mini_repeat_count=G, batch_size=32)
        drawn = draw(sampler, 12_000, with_rewards=True)
        first_draw = np.unique(drawn, return_index=True)[1]
        assert first_draw.size == 780, "the unseen bucket should have brought every prompt in"
        all_seen = first_draw.max() + 1
        rest = drawn[all_seen:]
        return {name: np.mean([hard(int(i)) for i in rest[lang[rest] == name]]) for name in ROWS}

    for name, share in hard_share_once_all_seen(SamplerConfig(name="balanced", reward_buckets=2)).items():
        assert abs(share - 0.5) < 0.05, name
    for name, share in hard_share_once_all_seen(SamplerConfig(name="balanced")).items():
        assert abs(share - 0.1) < 0.03, name


def test_without_reward_buckets_rewards_do_not_change_the_draws(languages):
    make = lambda: LanguageSampler(languages, SamplerConfig(name="balanced"), mini_repeat_count=G, batch_size=B)
    assert np.array_equal(draw(make(), 1600, with_rewards=True), draw(make(), 1600))


def test_set_epoch_chooses_the_epoch_drawn(languages):
    make = lambda: LanguageSampler(languages, SamplerConfig(name="balanced"), mini_repeat_count=G, batch_size=B)
    a, b, c = make(), make(), make()
    a.set_epoch(3)
    b.set_epoch(3)
    assert list(a) == list(b) != list(c)


def test_update_rewards_reads_tensors_and_rejects_bad_input(languages):
    sampler = LanguageSampler(languages, SamplerConfig(reward_buckets=2), mini_repeat_count=G, batch_size=B)
    sampler.update_rewards(torch.tensor([0, 0, 5]), torch.tensor([1.0, 0.0, 0.5]))
    assert sampler._reward_sum[[0, 5]].tolist() == [1.0, 0.5] and sampler._reward_n[[0, 5]].tolist() == [2, 1]
    with pytest.raises(ValueError, match="2 indices but 1 rewards"):
        sampler.update_rewards([0, 1], [1.0])
    with pytest.raises(ValueError, match="index 780 is not a row of a 780-row dataset"):
        sampler.update_rewards([780], [1.0])
    with pytest.raises(ValueError, match="reward nan for row 3 is not finite"):
        sampler.update_rewards([3], [float("nan")])


def test_an_expected_language_without_rows_is_an_error(languages):
    with pytest.raises(UserError, match="language 'hi' has no rows"):
        LanguageSampler(languages, SamplerConfig(), mini_repeat_count=G, expected_languages=["en", "hi"])


def test_a_row_without_a_language_is_an_error():
    with pytest.raises(UserError, match="row 1 has language None"):
        LanguageSampler(["en", None, "sw"], SamplerConfig(), mini_repeat_count=G)


def test_an_epoch_without_a_full_batch_is_an_error():
    with pytest.raises(UserError, match="an epoch of 3 prompts holds no full generation batch of 4"):
        LanguageSampler(["en", "en", "sw"], SamplerConfig(), mini_repeat_count=G, batch_size=4)


def test_an_oversampled_language_without_rows_is_an_error(languages):
    with pytest.raises(UserError, match="oversample names 'hi'"):
        LanguageSampler(languages, SamplerConfig(name="oversample", oversample={"hi": 2.0}), mini_repeat_count=G)


# ---- resuming from state_dict ------------------------------------------------------------------------

RESUME_CASES = {
    "balanced": SamplerConfig(name="balanced", prompts_per_epoch=40),
    "oversample+reward buckets": SamplerConfig(name="oversample", oversample={"sw": 4.0}, reward_buckets=2,
                                               prompts_per_epoch=40),
}


def consume(sampler: LanguageSampler, epochs: range, *, skip: int = 0, save_after: int | None = None):
    """Generation batches read epoch by epoch (set_epoch, then iterate, as the HF Trainer does), rewards
    reported after each; `skip` batches at the start are read and dropped, as HF does on resume. Returns
    the batches kept and, with save_after, a copy of the state after that many kept batches."""
    kept, saved, per_batch = [], None, sampler.batch_size * sampler.mini_repeat_count
    for epoch in epochs:
        sampler.set_epoch(epoch)
        iterator = iter(sampler)
        for _ in range(len(sampler) // per_batch):
            block = [next(iterator) for _ in range(per_batch)]
            if skip:
                skip -= 1
                continue
            kept.append(block)
            sampler.update_rewards(block, [0.0 if hard(i) else 1.0 for i in block])
            if len(kept) == save_after:
                saved = copy.deepcopy(sampler.state_dict())
    return kept, saved


@pytest.mark.parametrize("case", RESUME_CASES)
@pytest.mark.parametrize("save_after", [7, 10])  # 5 batches an epoch: inside epoch 1, at its end
def test_a_restored_sampler_continues_the_saved_order(case, save_after, languages):
    make = lambda: LanguageSampler(languages, RESUME_CASES[case], mini_repeat_count=G, batch_size=B)
    whole, state = consume(make(), range(4), save_after=save_after)
    epoch, done = divmod(save_after, 5)
    restored = make()
    restored.load_state_dict(state)
    rest, _ = consume(restored, range(epoch, 4), skip=done)
    assert rest == whole[save_after:]
    # Without the state the draws after the first epoch differ: they depend on the draws (and rewards) before.
    fresh, _ = consume(make(), range(epoch, 4), skip=done)
    assert fresh != whole[save_after:]
    assert restored.language_counts() == make_counts(whole, languages)


def make_counts(blocks, languages) -> dict[str, int]:
    prompts = [block[i] for block in blocks for i in range(0, len(block), G)]
    return {lang: sum(languages[i] == lang for i in prompts) for lang in sorted(ROWS)}


def test_a_state_from_other_data_is_refused(languages):
    state = LanguageSampler(languages, SamplerConfig(), mini_repeat_count=G, batch_size=B).state_dict()
    other = LanguageSampler(languages, SamplerConfig(), mini_repeat_count=G, batch_size=B // 2)
    with pytest.raises(UserError, match="batch_size = 8, this sampler 4"):
        other.load_state_dict(state)
