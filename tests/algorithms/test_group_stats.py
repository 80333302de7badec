"""group_stats: hand-worked numbers, a plain-Python reference, TRL's reshape path, devices and dtypes."""

from __future__ import annotations

import math
import random
from collections import defaultdict

import pytest
import torch

from mlgrpo.algorithms.group_stats import dense_index, group_max, group_stats, pair_ids

NAN = float("nan")


def reference(values: list[float], ids: list[int], ddof: int) -> tuple[list[float], list[float], list[float]]:
    """Per-row group mean, std and count with a dict of lists and math.fsum: slow and obviously right."""
    members: dict[int, list[float]] = defaultdict(list)
    for v, g in zip(values, ids):
        if not math.isnan(v):
            members[g].append(v)
    means, stds, counts = [], [], []
    for g in ids:
        xs = members[g]
        n = len(xs)
        mean = math.fsum(xs) / n if n else NAN
        if n == 0:
            std = NAN
        elif n <= ddof:
            std = 0.0
        else:
            std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - ddof))
        means.append(mean)
        stds.append(std)
        counts.append(float(n))
    return means, stds, counts


def random_batch(rng: random.Random, offset: int) -> tuple[list[float], list[int]]:
    """Groups of 1..64 rows with scattered ids, shuffled, about 10% NaN and a few all-NaN groups."""
    values, ids = [], []
    for _ in range(rng.randint(1, 12)):
        gid = offset + rng.randrange(0, 10**6)
        size = rng.randint(1, 64)
        nan_share = 1.0 if rng.random() < 0.1 else 0.1
        for _ in range(size):
            values.append(NAN if rng.random() < nan_share else rng.gauss(3.0, 2.0))
            ids.append(gid)
    order = list(range(len(values)))
    rng.shuffle(order)
    return [values[i] for i in order], [ids[i] for i in order]


def test_hand_worked_example():
    values = torch.tensor([1.0, 3.0, 10.0, NAN, 4.0])
    ids = torch.tensor([7, 7, 2, 5, 2])
    s = group_stats(values, ids, ddof=1)
    # group 7: [1, 3]: mean 2, squared deviations 1 + 1 = 2, ddof=1: var 2 / (2 - 1) = 2, std sqrt(2)
    # group 2: [10, 4]: mean 7, squared deviations 9 + 9 = 18, var 18 / 1 = 18, std sqrt(18) = 4.2426
    # group 5: only a NaN: count 0, mean NaN, std NaN
    torch.testing.assert_close(s.mean, torch.tensor([2.0, 2.0, 7.0, NAN, 7.0]), equal_nan=True)
    torch.testing.assert_close(s.std, torch.tensor([2**0.5, 2**0.5, 18**0.5, NAN, 18**0.5]), equal_nan=True)
    torch.testing.assert_close(s.count, torch.tensor([2.0, 2.0, 2.0, 0.0, 2.0]))
    # ddof=0: var 2 / 2 = 1 (std 1) and 18 / 2 = 9 (std 3)
    s0 = group_stats(values, ids, ddof=0)
    torch.testing.assert_close(s0.std, torch.tensor([1.0, 1.0, 3.0, NAN, 3.0]), equal_nan=True)


def test_singleton_groups_have_std_zero_for_both_ddof():
    values, ids = torch.tensor([5.0, 1.0, 2.0]), torch.tensor([0, 1, 1])
    for ddof in (0, 1):
        s = group_stats(values, ids, ddof=ddof)
        assert s.std[0].item() == 0.0 and s.mean[0].item() == 5.0 and s.count[0].item() == 1.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_constant_groups_are_exactly_constant(dtype):
    # 0.1 + 0.1 + 0.1 = 0.30000000000000004 and / 3 = 0.10000000000000002: a plain two-pass mean is off
    # by an ulp and leaves a std near 1e-17; the corrected mean is 0.1 exactly and the std exactly 0.
    values = torch.tensor([0.1] * 3 + [0.7] * 64 + [1e6 + 0.1] * 5, dtype=dtype)
    ids = torch.tensor([4] * 3 + [9] * 64 + [2] * 5)
    s = group_stats(values, ids)
    assert torch.equal(s.mean, values)
    assert torch.equal(s.std, torch.zeros_like(values))


def test_two_pass_survives_a_large_mean():
    # float32 rewards 10000.01, 10000.02, 10000.03 (rounded to float32): the spread is 0.01.
    values = torch.tensor([10000.01, 10000.02, 10000.03], dtype=torch.float32)
    exact = values.double().std().item()
    assert abs(group_stats(values, torch.zeros(3, dtype=torch.long)).std[0].item() - exact) < 1e-3 * exact
    # The one-pass formula in the same precision is far off (this is what the two passes avoid).
    n = 3
    one_pass = ((values**2).sum() - values.sum() ** 2 / n) / (n - 1)
    assert abs(one_pass.clamp(min=0).sqrt().item() - exact) > 0.5 * exact


@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("offset", [0, 2**40])  # small ids: the direct CPU route; huge ids: the sort route
def test_matches_python_reference_on_random_batches(ddof, offset):
    rng = random.Random(1000 * ddof + (offset > 0))
    for _ in range(40):
        values, ids = random_batch(rng, offset)
        s = group_stats(torch.tensor(values, dtype=torch.float64), torch.tensor(ids), ddof=ddof)
        mean, std, count = (torch.tensor(x, dtype=torch.float64) for x in reference(values, ids, ddof))
        torch.testing.assert_close(s.mean, mean, rtol=1e-12, atol=1e-12, equal_nan=True)
        torch.testing.assert_close(s.std, std, rtol=1e-12, atol=1e-12, equal_nan=True)
        torch.testing.assert_close(s.count, count)


def test_matches_trl_reshape_path_for_fixed_groups():
    # TRL: torch.nanmean(rewards.view(-1, G), dim=1) and trl.trainer.utils.nanstd (written out in
    # test_trl_parity.py, which runs TRL's own source); here the torch ops for the mean and the
    # Bessel-corrected std.
    g = 8
    rewards = torch.rand(64 * g, generator=torch.Generator().manual_seed(0))
    rewards[::13] = NAN
    s = group_stats(rewards, torch.arange(64).repeat_interleave(g))
    grouped = rewards.view(-1, g)
    mean = torch.nanmean(grouped, dim=1)
    n = (~grouped.isnan()).sum(dim=1)
    var = torch.nanmean((grouped - mean[:, None]) ** 2, dim=1) * n / (n - 1)
    torch.testing.assert_close(s.mean, mean.repeat_interleave(g))
    torch.testing.assert_close(s.std, var.sqrt().repeat_interleave(g))


def test_row_order_does_not_matter():
    rng = random.Random(7)
    values, ids = random_batch(rng, 0)
    v, i = torch.tensor(values, dtype=torch.float64), torch.tensor(ids)
    perm = torch.randperm(len(values), generator=torch.Generator().manual_seed(1))
    a, b = group_stats(v, i), group_stats(v[perm], i[perm])
    torch.testing.assert_close(a.mean[perm], b.mean, equal_nan=True)
    torch.testing.assert_close(a.std[perm], b.std, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_outputs_keep_dtype_and_device(dtype):
    s = group_stats(torch.tensor([1.0, 2.0, 4.0], dtype=dtype), torch.tensor([0, 0, 1]))
    for t in (s.mean, s.std, s.count):
        assert t.dtype == dtype and t.device == torch.device("cpu") and t.shape == (3,)
    assert s.mean.tolist() == [1.5, 1.5, 4.0]


def test_two_level_statistics_split_a_prompt_across_languages():
    values = torch.tensor([1.0, 3.0, 10.0, 20.0, 7.0])
    prompt = torch.tensor([0, 0, 0, 0, 1])
    lang = torch.tensor([0, 0, 1, 1, 1])
    s = group_stats(values, prompt, lang_ids=lang)
    # (lang 0, prompt 0) = [1, 3] -> 2; (lang 1, prompt 0) = [10, 20] -> 15; (lang 1, prompt 1) = [7]
    assert s.mean.tolist() == [2.0, 2.0, 15.0, 15.0, 7.0]
    # languages: lang 0 = [1, 3] -> 2; lang 1 = [10, 20, 7] -> 37 / 3
    torch.testing.assert_close(s.language.mean, torch.tensor([2.0, 2.0, 37 / 3, 37 / 3, 37 / 3]))
    assert s.language.count.tolist() == [2.0, 2.0, 3.0, 3.0, 3.0]


def test_num_ids_indexes_the_table_by_id():
    s = group_stats(torch.tensor([1.0, 2.0, 6.0]), torch.tensor([2, 2, 0]), num_ids=4)
    # slot = id: slot 0 holds [6], slot 2 holds [1, 2], slots 1 and 3 are empty
    assert s.table.count.tolist() == [1.0, 0.0, 2.0, 0.0]
    assert s.table.mean[0].item() == 6.0 and s.table.mean[2].item() == 1.5
    assert math.isnan(s.table.mean[1].item())


def test_dense_index_and_pair_ids_keep_equality():
    ids = torch.tensor([2**50, 3, 2**50, 7, 3])
    slots, size = dense_index(ids)
    assert slots.tolist() == [2, 0, 2, 1, 0]  # ranks of the sorted distinct ids 3 < 7 < 2**50
    assert size == 3  # on CPU the buffers are sized by the group count; on accelerators by N
    pairs = pair_ids(torch.tensor([0, 0, 1, 1]), torch.tensor([5, 6, 5, 5]))
    assert pairs[2] == pairs[3] and len(set(pairs.tolist())) == 3


def test_group_max_ignores_nan():
    out = group_max(torch.tensor([1.0, NAN, 5.0, NAN]), torch.tensor([0, 0, 0, 3]))
    assert out[:3].tolist() == [5.0, 5.0, 5.0] and out[3].item() == float("-inf")


def test_accelerator_route_runs_on_data_free_meta_tensors():
    # Meta tensors have shapes but no data: any .item(), .tolist(), boolean-mask indexing or other read
    # back to the host raises. The route taken on every non-CPU device therefore cannot synchronise.
    n = 1000
    values, ids = torch.empty(n, device="meta"), torch.empty(n, dtype=torch.long, device="meta")
    s = group_stats(values, ids, lang_ids=torch.empty(n, dtype=torch.long, device="meta"))
    assert s.mean.device.type == "meta" and s.std.shape == (n,) and s.language.count.shape == (n,)
    assert group_max(values, ids).shape == (n,)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (on a GPU machine: python -m bench.gpu_check)")
def test_cuda_has_no_host_synchronisation():
    values = torch.rand(10_000, device="cuda")
    ids = torch.randint(0, 2**40, (10_000,), device="cuda")
    group_stats(values, ids)  # warm-up: lazy CUDA initialisation may synchronise once
    torch.cuda.set_sync_debug_mode("error")
    try:
        s = group_stats(values, ids, lang_ids=ids % 3)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    ref = group_stats(values.cpu(), ids.cpu(), lang_ids=ids.cpu() % 3)
    torch.testing.assert_close(s.mean.cpu(), ref.mean)
    torch.testing.assert_close(s.std.cpu(), ref.std)


def test_gradients_flow_to_values():
    values = torch.tensor([1.0, 2.5, 4.0, -1.0, 3.0], dtype=torch.float64, requires_grad=True)
    ids = torch.tensor([0, 0, 0, 1, 1])
    assert torch.autograd.gradcheck(lambda v: (group_stats(v, ids).mean, group_stats(v, ids).std), (values,))


def test_empty_batch():
    s = group_stats(torch.empty(0), torch.empty(0, dtype=torch.long))
    assert s.mean.shape == (0,) and s.table.count.shape == (0,)


def test_bad_inputs_say_what_is_wrong():
    with pytest.raises(TypeError, match="integer"):
        group_stats(torch.ones(3), torch.ones(3))
    with pytest.raises(ValueError, match="same length"):
        group_stats(torch.ones(3), torch.zeros(4, dtype=torch.long))
    with pytest.raises(TypeError, match="float"):
        group_stats(torch.ones(3, dtype=torch.long), torch.zeros(3, dtype=torch.long))
