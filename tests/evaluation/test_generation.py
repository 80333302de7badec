"""Batched generation and KL to a reference on a tiny random Qwen2: padding must not change results."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mlgrpo.evaluation.generation import (  # noqa: E402
    completion_kl,
    cut_at_eos,
    generate,
    left_pad,
    pad_id,
    prompt_token_ids,
)


@pytest.fixture(scope="module")
def prompts(numbers_eval):
    # Prompts of different lengths in one batch: "<en> number: 5 ->" and "<ja> number: 946 ->".
    return [r["prompt"] for r in numbers_eval[::4]]


def test_left_padding_and_eos_cut():
    ids, mask = left_pad([[5, 6, 7], [8]], 0, "cpu")
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]] and mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert cut_at_eos([4, 2, 9], frozenset({2})) == ([4, 2], True)


def test_greedy_completions_do_not_depend_on_the_batch(tiny_policy, prompts):
    model, tokenizer = tiny_policy
    model.eval()
    ids = prompt_token_ids(tokenizer, prompts)
    one_by_one = generate(model, tokenizer, ids, max_new_tokens=6, batch_size=1)
    batched = generate(model, tokenizer, ids, max_new_tokens=6, batch_size=len(ids))
    assert batched.texts == one_by_one.texts and batched.ids == one_by_one.ids
    assert all(0 <= n <= 6 for n in batched.lengths())


def test_sampling_is_seeded_and_leaves_the_global_rng_alone(tiny_policy, prompts):
    model, tokenizer = tiny_policy
    ids = prompt_token_ids(tokenizer, prompts[:3])
    state = torch.get_rng_state()
    first = generate(model, tokenizer, ids, max_new_tokens=5, batch_size=8, sample=True, samples=4, seed=7)
    assert torch.equal(torch.get_rng_state(), state)
    again = generate(model, tokenizer, ids, max_new_tokens=5, batch_size=8, sample=True, samples=4, seed=7)
    assert len(first.texts) == 12 and first.texts == again.texts
    assert len(set(first.texts)) > 1  # a random model's samples differ


def test_kl_is_zero_against_itself_positive_against_another_model_and_padding_free(tiny_policy, other_policy,
                                                                                    prompts):
    model, tokenizer = tiny_policy
    ids = prompt_token_ids(tokenizer, prompts)
    completions = generate(model, tokenizer, ids, max_new_tokens=6, batch_size=16).ids
    pad = pad_id(tokenizer)
    self_kl = completion_kl(model, model, ids, completions, pad_id=pad)
    assert all(v is None or abs(v) < 1e-6 for v in self_kl)
    batched = completion_kl(model, other_policy, ids, completions, pad_id=pad, batch_size=16)
    single = completion_kl(model, other_policy, ids, completions, pad_id=pad, batch_size=1)
    assert batched == pytest.approx(single, abs=1e-5)
    assert all(v is None or v > 0 for v in batched) and any(v is not None for v in batched)


def test_kl_by_hand_for_one_completion(tiny_policy, other_policy):
    # KL at each completion position = sum_v p(v) (log p(v) - log q(v)), averaged over positions.
    model, tokenizer = tiny_policy
    prompt = prompt_token_ids(tokenizer, ["<en> number: 5 ->"])[0]
    completion = [5, 6, 7]
    full = torch.tensor([prompt + completion])
    with torch.no_grad():
        logp = torch.log_softmax(model(full).logits[0, len(prompt) - 1:-1], -1)
        logq = torch.log_softmax(other_policy(full).logits[0, len(prompt) - 1:-1], -1)
    expected = (logp.exp() * (logp - logq)).sum(-1).mean().item()
    [got] = completion_kl(model, other_policy, [prompt], [completion], pad_id=pad_id(tokenizer))
    assert got == pytest.approx(expected, rel=1e-5)
