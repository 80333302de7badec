"""The one on-device primitive behind every grouping: per-group mean, std and count of a value tensor.

Prompt groups, language groups, hash buckets, std scopes and per-language metrics all call
`group_stats`; nothing else in mlgrpo reduces over groups. It works on the tensors' own device, has no
Python loop over groups and never reads a value back to the host on an accelerator (`.item()`,
`.tolist()`, `.cpu()`, boolean-mask indexing), so a CUDA step is not stalled by it.

Conventions (pinned here, relied on by the estimators):
- NaN marks a missing value and is ignored; `count` counts the non-NaN values. A group with no
  non-NaN value has mean NaN, std NaN, count 0. +-inf is not missing: a group holding one has
  non-finite statistics (`compute_advantages` turns non-finite rewards into NaN, and counts them, first).
- std = sqrt(sum((x - mean)^2) / (count - ddof)). TRL and torch.std use ddof=1 (our default).
  When count <= ddof (a singleton group with ddof=1) there is no spread to estimate and we return
  std 0, never NaN: a lone sample then gets advantage 0, which is what TRL ends up with after its
  nan_to_num. eps is not added here; estimators add it to std (TRL: std + 1e-4).
- Two-pass variance: the mean first, then the sum of squared deviations from it. A one-pass
  sum-of-squares formula cancels catastrophically when the mean is large next to the spread, and the
  variance floor once added to hide that shrank advantages about 120x (verl issue #6348). Between the
  passes the mean is corrected by the mean of the deviations (the "corrected two-pass" algorithm,
  Chan, Golub & LeVeque 1983). Besides accuracy this makes a constant group exactly constant: 0.1 + 0.1
  + 0.1 is not 0.3 in floating point, so a plain two-pass mean of three 0.1s is off by an ulp and the
  std comes out near 1e-17 instead of 0; corrected, the mean is exactly 0.1 and the std exactly 0, so
  zero-std groups are counted exactly and eps=0 cannot blow rounding noise up into +-1 advantages.
- On CUDA the sums use atomics: bitwise reproducibility needs torch.use_deterministic_algorithms(True).
- Sums run in float32 for float16/bfloat16 inputs; results come back in the input dtype.

Knows nothing about rewards, languages, models or MLflow: only values and integer ids.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor

# A dense index is used as is on CPU when the largest id is below this many slots per row: the buffers
# stay O(N) and the sort (most of the cost on CPU) is skipped.
_CPU_DIRECT_SLOTS_PER_ROW = 4


@dataclass(frozen=True)
class GroupTable:
    """Statistics per group slot. S >= number of groups; slots that hold no non-NaN value have count 0."""

    mean: Tensor  # (S,) mean of the slot's non-NaN values; NaN when count is 0
    std: Tensor  # (S,) std with the caller's ddof; 0 when 1 <= count <= ddof; NaN when count is 0
    count: Tensor  # (S,) number of non-NaN values (values' dtype)


@dataclass(frozen=True)
class GroupStats:
    """Every row's own group statistic broadcast back to the row, on the values' device and dtype."""

    mean: Tensor  # (N,)
    std: Tensor  # (N,)
    count: Tensor  # (N,) non-NaN values in the row's group (values' dtype)
    index: Tensor  # (N,) int64 slot of the row's group in `table`: equal slots <=> same group
    table: GroupTable  # per-slot statistics, for reducers that want one number per group
    language: GroupStats | None = None  # with `lang_ids`: the same statistics per language


def group_stats(
    values: Tensor,
    group_ids: Tensor,
    ddof: int = 1,
    *,
    lang_ids: Tensor | None = None,
    num_ids: int | None = None,
) -> GroupStats:
    """Mean, std and count of `values` within each group of `group_ids`, broadcast back to the rows.

    values:    (N,) float. NaN entries are ignored.
    group_ids: (N,) integer ids, arbitrary: not contiguous, not sorted, any group size including 1.
    ddof:      delta degrees of freedom of the std (1: sample std, as TRL; 0: population std).
    lang_ids:  (N,) integer language ids for two-level statistics: groups are then (language, group)
               pairs (the same prompt id in two languages is two groups), and `.language` holds the
               per-language statistics.
    num_ids:   a promise that every id is in [0, num_ids): the ids are used as slots, unchanged and
               unsorted, and `table` is indexed by id (per-language tables for metrics use this).

    >>> s = group_stats(torch.tensor([1.0, 3.0, 10.0]), torch.tensor([7, 7, 2]))
    >>> s.mean.tolist(), s.std.tolist(), s.count.tolist()
    ([2.0, 2.0, 10.0], [1.4142135381698608, 1.4142135381698608, 0.0], [2.0, 2.0, 1.0])
    """
    _check_ids("group_ids", group_ids, values)
    if not values.is_floating_point():
        raise TypeError(f"group_stats: values must be a float tensor, got {values.dtype}")
    if ddof < 0:
        raise ValueError(f"group_stats: ddof must be >= 0, got {ddof}")
    if lang_ids is None:
        return _stats(values, group_ids.long(), ddof, num_ids)
    if num_ids is not None:
        raise ValueError("group_stats: num_ids cannot be combined with lang_ids (pairs are renumbered)")
    _check_ids("lang_ids", lang_ids, values)
    inner = _stats(values, pair_ids(lang_ids.long(), group_ids.long()), ddof, None)
    return replace(inner, language=_stats(values, lang_ids.long(), ddof, None))


def pair_ids(outer: Tensor, inner: Tensor) -> Tensor:
    """(N,) int64 ids of the (outer, inner) pairs: equal iff both ids are equal. No host sync."""
    outer_index, _ = dense_index(outer)
    inner_index, inner_size = dense_index(inner)
    return outer_index * inner_size + inner_index


def dense_index(ids: Tensor, num_ids: int | None = None) -> tuple[Tensor, int]:
    """Map arbitrary int64 ids to slots in [0, size): equal ids <=> equal slots. Returns (slots, size).

    The general route sorts (torch.unique would need the group count on the host to size its output,
    a synchronisation): a slot is the rank of the id among the sorted distinct ids, and size is N on an
    accelerator. On CPU, where reading a value costs no synchronisation, size is the group count, and
    ids that already fit in a small buffer are used directly, skipping the sort (most of the CPU cost).
    Every route gives the same statistics.
    """
    n = ids.shape[0]
    if num_ids is not None:
        return ids, num_ids
    if n == 0:
        return ids, 0
    if ids.device.type == "cpu":
        low, high = (int(v) for v in torch.aminmax(ids))
        if low >= 0 and high < _CPU_DIRECT_SLOTS_PER_ROW * n:
            return ids, high + 1
    sorted_ids, order = torch.sort(ids)
    starts = torch.ones_like(sorted_ids, dtype=torch.bool)
    starts[1:] = sorted_ids[1:] != sorted_ids[:-1]
    ranks = torch.cumsum(starts, dim=0) - 1
    # On CPU the group count is free to read and keeps the per-slot buffers small; elsewhere it would
    # synchronise, and N slots (some unused) do the same job.
    size = int(ranks[-1]) + 1 if ids.device.type == "cpu" else n
    return torch.empty_like(ids).scatter_(0, order, ranks), size


def _stats(values: Tensor, ids: Tensor, ddof: int, num_ids: int | None) -> GroupStats:
    index, size = dense_index(ids, num_ids)
    acc = torch.float32 if values.dtype in (torch.float16, torch.bfloat16) else values.dtype
    x = values.to(acc)
    missing = torch.isnan(x)
    present = (~missing).to(acc)  # 1.0 for a value, 0.0 for a NaN: multiplies deviations of NaN rows to 0

    def per_slot(v: Tensor) -> Tensor:
        return torch.zeros(size, dtype=acc, device=x.device).scatter_add_(0, index, v)

    def per_row(slot_values: Tensor) -> Tensor:
        return slot_values.index_select(0, index)

    count = per_slot(present)
    has_values = count > 0
    divisor = torch.where(has_values, count, 1.0)  # no 0/0 anywhere, so gradients stay finite too
    filled = x.masked_fill(missing, 0.0)
    first_mean = per_slot(filled) / divisor
    deviation = (filled - per_row(first_mean)) * present
    correction = per_slot(deviation) / divisor  # the rounding error of first_mean
    residual = (deviation - per_row(correction)) * present
    squares = per_slot(residual * residual)
    enough = count > ddof
    var = torch.where(enough, squares / torch.where(enough, count - ddof, 1.0), 0.0)
    table = GroupTable(
        mean=torch.where(has_values, first_mean + correction, float("nan")),
        std=torch.where(has_values, torch.sqrt(var), float("nan")),
        count=count,
    )
    out = values.dtype
    return GroupStats(
        mean=per_row(table.mean).to(out),
        std=per_row(table.std).to(out),
        count=per_row(count).to(out),
        index=index,
        table=table,
    )


def group_max(values: Tensor, group_ids: Tensor) -> Tensor:
    """(N,) the largest non-NaN value of each row's group (-inf for a group of NaNs). No host sync.

    The shift that keeps a per-group softmax from overflowing (shaping.temperature_advantages).
    """
    _check_ids("group_ids", group_ids, values)
    index, size = dense_index(group_ids.long())
    masked = torch.where(torch.isnan(values), float("-inf"), values)
    top = torch.full((size,), float("-inf"), dtype=values.dtype, device=values.device)
    return top.scatter_reduce(0, index, masked, reduce="amax").index_select(0, index)


def _check_ids(name: str, ids: Tensor, values: Tensor) -> None:
    if ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.is_complex():
        raise TypeError(f"group_stats: {name} must be an integer tensor, got {ids.dtype}")
    if values.dim() != 1 or ids.shape != values.shape:
        raise ValueError(
            f"group_stats: values and {name} must be 1-D of the same length, got {tuple(values.shape)} "
            f"and {tuple(ids.shape)}; flatten (N, T) inputs first"
        )
    if ids.device != values.device:
        raise ValueError(f"group_stats: {name} is on {ids.device} but values are on {values.device}")
