"""Which part of one global index order each rank reads.

The rule is accelerate's (accelerate/data_loader.py::BatchSamplerShard, split_batches=False): the order
is cut into consecutive per-rank batches, dealt to ranks 0, 1, ..., W-1 in turn. With TRL's layout the
per-rank batch is per_device_train_batch_size * steps_per_generation. TRL lets a group of G completions
straddle two ranks (it gathers rewards before normalising); we refuse that, so that each rank holds whole
groups. Knows nothing about samplers' weights, models or MLflow.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mlgrpo.errors import UserError


def rank_shard(
    order: Sequence[int] | np.ndarray, *, world_size: int, rank: int, per_rank_batch: int, group_size: int
) -> np.ndarray:
    """The indices of `order` that rank `rank` of `world_size` reads, in reading order.

    Example: order 0..11, world_size 2, per_rank_batch 3, group_size 3 (or 1):
    batches [0 1 2] [3 4 5] [6 7 8] [9 10 11] -> rank 0 reads 0 1 2 6 7 8, rank 1 reads 3 4 5 9 10 11.
    Raises UserError when a group of `group_size` would be split between ranks, and when the order
    does not fill whole rounds of world_size * per_rank_batch (accelerate would pad by repeating the
    first indices; a GRPO order never needs that, since one generation batch is one round).
    """
    if world_size < 1 or not 0 <= rank < world_size:
        raise UserError(f"rank {rank} is not one of the {world_size} ranks 0..{world_size - 1}")
    if per_rank_batch < 1 or group_size < 1 or per_rank_batch % group_size:
        raise UserError(
            f"a per-rank batch of {per_rank_batch} indices does not hold whole groups of {group_size} "
            "completions, so a prompt's group would be split between ranks; make "
            "per_device_train_batch_size * steps_per_generation a multiple of num_generations"
        )
    arr = np.asarray(order)
    round_size = world_size * per_rank_batch
    if arr.size % round_size:
        raise UserError(
            f"an order of {arr.size} indices does not split into whole rounds of {world_size} ranks x "
            f"{per_rank_batch} indices (remainder {arr.size % round_size}); make the generation batch "
            "(batch_size x G) a multiple of world_size x per-rank batch"
        )
    return arr.reshape(-1, world_size, per_rank_batch)[:, rank, :].ravel()
