"""The Rollout record: what TRL's batch becomes, and the shuffle and split the step does as TRL does them."""

from __future__ import annotations

import io

import pytest
import torch
from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict

from mlgrpo.algorithms import InterGroupRows
from mlgrpo.errors import UserError
from mlgrpo.trainers.rollout import Rollout

B, P, T = 6, 3, 4


def trl_batch() -> dict:
    g = torch.Generator().manual_seed(0)
    return {"prompt_ids": torch.randint(0, 50, (B, P), generator=g), "prompt_mask": torch.ones(B, P, dtype=torch.long),
            "completion_ids": torch.randint(0, 50, (B, T), generator=g),
            "completion_mask": torch.tensor([[1, 1, 1, 0]] * B), "tool_mask": torch.tensor([[1, 0, 1, 1]] * B),
            "old_per_token_logps": torch.randn(B, T, generator=g), "advantages": torch.randn(B, generator=g),
            "num_items_in_batch": torch.tensor(18.0)}


def record() -> Rollout:
    rows = InterGroupRows(torch.arange(B) // 2, torch.randn(B), torch.full((B,), 2.0), torch.full((B,), 3.0))
    return Rollout.from_trl(trl_batch(), [f"l{i}" for i in range(B)], advantages=torch.arange(B, dtype=torch.float),
                            regularizer=rows)


def test_trls_batch_becomes_the_record_without_trls_advantages():
    r = record()
    batch = trl_batch()
    assert torch.equal(r.old_logps, batch["old_per_token_logps"]) and r.ref_logps is None
    assert torch.equal(r.advantages, torch.arange(B, dtype=torch.float))  # mlgrpo's, not TRL's
    assert r.batch_tokens.item() == 18.0 and r.rows == B
    assert torch.equal(r.loss_mask, torch.tensor([[1, 0, 1, 0]] * B))  # completion tokens without tool output


def test_an_image_batch_is_refused_by_name():
    with pytest.raises(UserError, match="pixel_values"):
        Rollout.from_trl({**trl_batch(), "pixel_values": torch.zeros(2, 3)}, ["en"] * B)


def test_shuffle_and_split_are_trls_on_the_same_generator_state():
    r, batch = record(), trl_batch()
    torch.manual_seed(7)
    theirs = split_tensor_dict(shuffle_sequence_dict({**batch, "advantages": r.advantages, "lang": r.languages}), 3)
    torch.manual_seed(7)
    ours = r.shuffled().split(3)
    assert len(ours) == 3
    for mine, trl in zip(ours, theirs, strict=True):
        assert torch.equal(mine.completion_ids, trl["completion_ids"]) and torch.equal(mine.advantages, trl["advantages"])
        assert mine.languages == trl["lang"] and mine.batch_tokens.item() == 18.0  # 0-d fields stay whole
        # every per-row field travels with its row, the regulariser's too
        assert torch.equal(mine.regularizer.group_ids, mine.advantages.long() // 2)


def test_a_checkpointed_record_reads_back_with_weights_only():
    r = record()
    buffer = io.BytesIO()
    torch.save([r.state()], buffer)
    buffer.seek(0)
    back = Rollout.from_state(torch.load(buffer, weights_only=True)[0])
    assert back.languages == r.languages and back.value_mask is None
    assert torch.equal(back.regularizer.centred_mean, r.regularizer.centred_mean)
    assert torch.equal(back.old_logps, r.old_logps)
