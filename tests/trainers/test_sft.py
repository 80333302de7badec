"""The SFT control arm: the RL arms' prompts in their order and number, the records' answers as targets, a loss
equal to transformers' own cross-entropy, the time budget, and the settings it refuses."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset

from mlgrpo.data.suites import load_suite
from mlgrpo.errors import UserError
from mlgrpo.sampling import SamplerConfig
from mlgrpo.trainers import AlgorithmConfig, KLConfig, MultilingualGRPOTrainer, SFTSettings, SupervisedTrainer

from .conftest import LANGUAGES, grpo_args, length_reward

SFT = AlgorithmConfig(name="sft")


class SeesPrompts:
    def rollout(self, inputs):
        self.prompts = getattr(self, "prompts", []) + [[row["prompt"] for row in inputs]]
        output = super().rollout(inputs)
        self.batches = getattr(self, "batches", []) + [output]
        return output


class GRPOSees(SeesPrompts, MultilingualGRPOTrainer):
    pass


class SFTSees(SeesPrompts, SupervisedTrainer):
    pass


def params(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in model.parameters()])


def test_sft_reads_the_rl_arms_prompts_in_their_order_and_learns_the_answers(tmp_path, make_model, tokenizer,
                                                                              dataset):
    sampler = SamplerConfig(name="balanced", seed=0)
    args = dict(max_steps=6, per_device_train_batch_size=8, steps_per_generation=2, learning_rate=3e-3)
    grpo = GRPOSees(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path / "grpo", **args),
                    train_dataset=dataset, processing_class=tokenizer, sampler=sampler)
    grpo.train()
    model = make_model()
    start = params(model)
    sft = SFTSees(model=model, reward_funcs=[length_reward], args=grpo_args(tmp_path / "sft", **args),
                  train_dataset=dataset, processing_class=tokenizer, sampler=sampler, algorithm=SFT)
    sft.train()
    assert sft.prompts == grpo.prompts and len(sft.prompts) == 3  # 6 steps, 2 per rollout: the same 3 rollouts
    assert sum(map(len, sft.prompts)) == 6 * 8  # as many samples as GRPO's completions
    assert (params(model) - start).abs().max() > 1e-3
    nll = [entry["sft/nll"] for entry in sft.state.log_history if "sft/nll" in entry]
    assert len(nll) == 6 and nll[-1] < nll[0]  # the references got likelier
    logged = {key for entry in sft.state.log_history for key in entry}
    assert {f"sft/nll/{lang}" for lang in LANGUAGES} <= logged


def test_each_copy_of_a_prompt_trains_on_its_own_accepted_answer(tmp_path, make_model, tokenizer):
    # English numbers with two accepted spellings: CLDR's "one hundred one", num2words' "one hundred and one".
    rows = [r for r in load_suite("numbers", languages=["en"]) if len(r["answers"]) == 2][:8]
    data = Dataset.from_list([{k: r[k] for k in ("prompt", "reference", "answers", "language")} for r in rows])
    sft = SFTSees(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=1, num_generations=2, max_completion_length=32,
                  per_device_train_batch_size=8), train_dataset=data, processing_class=tokenizer, algorithm=SFT)
    sft.train()
    batch = sft.batches[0]
    texts = tokenizer.batch_decode(batch.completion_ids * batch.completion_mask, skip_special_tokens=True)
    rows = {row["prompt"]: row["answers"] for row in data}
    for k, (prompt, text) in enumerate(zip(sft.prompts[0], texts)):
        assert text.strip() == rows[prompt][k % 2]  # copy 0: the reference, copy 1: the other spelling


def test_sft_loss_is_transformers_cross_entropy_of_the_target_tokens(tmp_path, make_model, tokenizer, dataset):
    sft = SFTSees(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=1),
                  train_dataset=dataset, processing_class=tokenizer, algorithm=SFT)
    sft.train()
    batch = sft.batches[0].select(torch.arange(4))
    ids = torch.cat([batch.prompt_ids, batch.completion_ids], dim=1)
    attention = torch.cat([batch.prompt_mask, batch.completion_mask], dim=1)
    labels = ids.masked_fill(torch.cat([torch.zeros_like(batch.prompt_mask), batch.completion_mask], 1) == 0, -100)
    with torch.no_grad():
        expected = sft.model(input_ids=ids, attention_mask=attention, labels=labels).loss  # HF's shifted token mean
        ours = sft.loss(sft.model, batch) * sft.current_gradient_accumulation_steps
    torch.testing.assert_close(ours, expected, rtol=1e-5, atol=1e-6)


def test_time_budget_stops_training_and_is_carried_by_checkpoints(tmp_path, make_model, tokenizer, dataset):
    algorithm = AlgorithmConfig(name="sft", sft=SFTSettings(budget="time", seconds=0.3))
    sft = SupervisedTrainer(model=make_model(), reward_funcs=[length_reward],
                            args=grpo_args(tmp_path, max_steps=500, save_strategy="steps", save_steps=1),
                            train_dataset=dataset, processing_class=tokenizer, algorithm=algorithm)
    sft.train()
    assert 1 <= sft.state.global_step < 500 and sft.seconds_used() >= 0.3
    state = torch.load(next(tmp_path.glob("checkpoint-*/mlgrpo_state_rank0.pt")), weights_only=True)
    assert state["sft_seconds"] > 0


def test_what_sft_cannot_do_is_refused(tmp_path, make_model, tokenizer, dataset):
    with pytest.raises(UserError, match="no KL to the initial policy"):
        KLConfig(coef=0.05).check("sft")
    with pytest.raises(UserError, match="sft.seconds must be > 0 with budget time"):
        SFTSettings(budget="time")
    with pytest.raises(UserError, match="algorithm.sft settings are set but algorithm.name is grpo"):
        AlgorithmConfig(sft=SFTSettings(target="solution"))
    common = dict(model=make_model(), reward_funcs=[length_reward], train_dataset=dataset, processing_class=tokenizer)
    with pytest.raises(UserError, match="entropy bonus acts on sampled completions"):
        SupervisedTrainer(args=grpo_args(tmp_path, entropy_coef=0.01), algorithm=SFT, **common)
    with pytest.raises(UserError, match="reward_buckets draws by earlier rewards"):
        SupervisedTrainer(args=grpo_args(tmp_path), algorithm=SFT, sampler=SamplerConfig(reward_buckets=2), **common)
    with pytest.raises(UserError, match="has no 'solution' column"):
        SupervisedTrainer(args=grpo_args(tmp_path), algorithm=AlgorithmConfig(name="sft", sft=SFTSettings(target="solution")),
                          **common)
