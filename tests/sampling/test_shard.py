import numpy as np
import pytest
from accelerate.data_loader import prepare_data_loader
from torch.utils.data import DataLoader

from mlgrpo.errors import UserError
from mlgrpo.sampling import LanguageSampler, SamplerConfig, rank_shard

G, B = 4, 8  # a generation batch is B * G = 32 indices, dealt to world_size ranks


def test_hand_worked_deal():
    order = np.arange(12)
    assert rank_shard(order, world_size=2, rank=0, per_rank_batch=3, group_size=3).tolist() == [0, 1, 2, 6, 7, 8]
    assert rank_shard(order, world_size=2, rank=1, per_rank_batch=3, group_size=1).tolist() == [3, 4, 5, 9, 10, 11]


def global_order(languages, epochs: int, seed: int = 0) -> np.ndarray:
    config = SamplerConfig(name="temperature", seed=seed)
    sampler = LanguageSampler(languages, config, mini_repeat_count=G, batch_size=B)
    return np.concatenate([list(sampler) for _ in range(epochs)])


@pytest.mark.parametrize("world_size", [2, 4])
def test_shards_are_disjoint_cover_the_order_and_hold_whole_groups(world_size, languages):
    order = global_order(languages, epochs=2)
    per_rank = B * G // world_size
    shards = [rank_shard(order, world_size=world_size, rank=r, per_rank_batch=per_rank, group_size=G)
              for r in range(world_size)]
    # positions: rank r holds positions r*per_rank.. of each round; disjoint, and together every position
    positions = [rank_shard(np.arange(order.size), world_size=world_size, rank=r, per_rank_batch=per_rank,
                            group_size=G) for r in range(world_size)]
    assert sorted(np.concatenate(positions).tolist()) == list(range(order.size))
    for shard, where in zip(shards, positions):
        assert np.array_equal(shard, order[where])
        groups = shard.reshape(-1, G)
        assert (groups == groups[:, :1]).all(), "a group of G is split between ranks"
    # groups are whole, so each rank's prompts are the global prompts, dealt without overlap
    assert sorted(np.concatenate([s[::G] for s in shards]).tolist()) == sorted(order[::G].tolist())


@pytest.mark.parametrize("world_size", [2, 4])
def test_accelerate_deals_each_rank_its_shard(world_size, languages):
    # Each rank builds its own sampler with the same seed, as every process of a TRL run does, and
    # accelerate's real DataLoaderShard (which also calls set_epoch) picks that rank's batches.
    per_rank = B * G // world_size
    order = global_order(languages, epochs=2)
    for rank in range(world_size):
        sampler = LanguageSampler(languages, SamplerConfig(name="temperature"), mini_repeat_count=G, batch_size=B)
        loader = prepare_data_loader(DataLoader(range(len(languages)), batch_size=per_rank, sampler=sampler),
                                     num_processes=world_size, process_index=rank, put_on_device=False)
        read = np.concatenate([batch.numpy() for _ in range(2) for batch in loader])
        expected = rank_shard(order, world_size=world_size, rank=rank, per_rank_batch=per_rank, group_size=G)
        assert np.array_equal(read, expected)


def test_a_group_split_between_ranks_is_refused():
    with pytest.raises(UserError, match="per-rank batch of 6 indices does not hold whole groups of 4"):
        rank_shard(np.arange(24), world_size=2, rank=0, per_rank_batch=6, group_size=4)


def test_an_order_that_is_not_whole_rounds_is_refused():
    with pytest.raises(UserError, match="order of 20 indices does not split into whole rounds of 2 ranks x 8"):
        rank_shard(np.arange(20), world_size=2, rank=1, per_rank_batch=8, group_size=4)


def test_a_rank_outside_the_world_is_refused():
    with pytest.raises(UserError, match="rank 2 is not one of the 2 ranks"):
        rank_shard(np.arange(16), world_size=2, rank=2, per_rank_batch=8, group_size=4)
