"""DAPO's dynamic sampling (Yu et al. 2025): which groups carry no learning signal, and which fill a batch.

A group whose rewards are all equal gets advantage 0 on every row under every group estimator (grpo,
dr_grpo, rloo, reinforce_pp: r minus the group's baseline is 0), so it only dilutes the batch. DAPO drops
such groups and refills the batch with fresh prompts. Two functions, pure tensor math on the tensors' device:

    constant_groups(rewards, group_ids, tolerance) -> (N,) bool, True on the rows of a constant group
    select_groups(informative, slots)             -> the candidate groups that fill `slots`

"Constant" is decided by the group's range, max - min <= tolerance x max(1, largest |reward| in the group):
- not by its mean: a filter on mean 0 or 1 (binary rewards) lets a constant group of continuous rewards
  (all 0.73) through (OpenRLHF#1270);
- not by a float32 std: rewards that are equal in exact arithmetic but computed in float32 (0.1 + 0.2 vs
  0.3) differ by an ulp and get a std of ~1e-8 > 0, so `std == 0` keeps them, and they then get +-1
  advantages from rounding noise divided by std + eps (NVIDIA-NeMo/RL#4158). The range test with a
  relative tolerance is scale-free above 1 and absolute below it.
Whole groups only: rows are kept or dropped with their group, never one by one, since dropping some rows
of a group would change its baseline under a leave-one-out estimator (NVIDIA-NeMo/RL#3469).
Knows nothing about models, samplers, trainers or MLflow.
"""

from __future__ import annotations

import torch
from torch import Tensor

from mlgrpo.algorithms.group_stats import group_max


def constant_groups(rewards: Tensor, group_ids: Tensor, tolerance: float = 1e-6) -> Tensor:
    """(N,) bool: True on every row of a group whose rewards do not differ (see the module docstring).

    rewards:   (N,) one reward per row, or (N, K) one column per objective (constant: in every column).
               NaN and +-inf are unscored (compute_advantages gives them advantage 0) and take no part;
               a group with fewer than two scored rows is constant.
    group_ids: (N,) integer ids, as group_stats takes them.
    tolerance: the largest range that counts as constant, relative to the group's largest |reward| when
               that is above 1.

    Hand-worked: group 0 = (0.73, 0.73, 0.73): range 0, constant. Group 1 = (1, 1, 0): range 1 > 1e-6,
    not constant. Group 2 = (0.3, 0.7 - 0.4) in float32: 0.3 rounds to 0.30000001192, 0.7 - 0.4 to
    0.29999998212, one ulp apart; 2.98e-8 <= 1e-6 x max(1, 0.3): constant (its float32 std is 2.1e-8).

    >>> r = torch.tensor([0.73, 0.73, 0.73, 1.0, 1.0, 0.0, 0.3, 0.0])
    >>> r[7] = torch.tensor(0.7) - torch.tensor(0.4)
    >>> constant_groups(r, torch.tensor([0, 0, 0, 1, 1, 1, 2, 2])).tolist()
    [True, True, True, False, False, False, True, True]
    """
    if tolerance < 0:
        raise ValueError(f"constant_groups: tolerance must be >= 0, got {tolerance}")
    columns = rewards.unsqueeze(1) if rewards.dim() == 1 else rewards
    if columns.dim() != 2 or columns.shape[0] != group_ids.shape[0]:
        raise ValueError(f"constant_groups: rewards must be (N,) or (N, K) with N = {group_ids.shape[0]} group ids, "
                         f"got {tuple(rewards.shape)}")
    constant = torch.ones(columns.shape[0], dtype=torch.bool, device=columns.device)
    for k in range(columns.shape[1]):  # objectives, a handful; the groups are reduced on device
        x = columns[:, k]
        x = torch.where(torch.isfinite(x), x, float("nan"))
        high = group_max(x, group_ids)  # -inf for a group without a scored row
        low = -group_max(-x, group_ids)  # +inf for that group: its range is -inf, so it is constant
        scale = torch.maximum(high.abs(), low.abs()).clamp(min=1.0)
        constant &= (high - low) <= tolerance * scale
    return constant


def select_groups(informative: Tensor, slots: int) -> Tensor:
    """(slots,) int64 indices, ascending, of the candidates that fill a batch of `slots` groups.

    informative: (C,) bool over the candidate groups in the order they were generated (round by round),
                 True where the group is not constant.
    The first `slots` informative groups are taken; when there are fewer, the batch is filled with the
    earliest constant groups (re-admitted: a full batch keeps the shapes TRL splits into micro-batches; they
    get advantage 0, as without dynamic sampling). The chosen groups keep their generation order, so a
    batch that needs no refill is chosen unchanged.

    Hand-worked: candidates (const, inf, const, inf, inf): 2 slots take the informative 1 and 3; 4 slots
    take all three informative ones (1, 3, 4) and re-admit the earliest constant group, 0.

    >>> flags = torch.tensor([False, True, False, True, True])
    >>> select_groups(flags, 2).tolist(), select_groups(flags, 4).tolist()
    ([1, 3], [0, 1, 3, 4])
    """
    if informative.dim() != 1 or informative.dtype != torch.bool:
        raise ValueError(f"select_groups: informative must be a 1-D bool tensor, got {informative.dtype} "
                         f"{tuple(informative.shape)}")
    if not 0 <= slots <= informative.shape[0]:
        raise ValueError(f"select_groups: {slots} slots from {informative.shape[0]} candidates")
    order = torch.argsort((~informative).to(torch.int64), stable=True)  # informative first, each in order
    return torch.sort(order[:slots]).values
