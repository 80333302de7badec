"""Pins what mlgrpo/trainers/trl_hooks.py relies on, against stock trl.GRPOTrainer (trl 1.16).

If a TRL upgrade moves one of these, the test named after it fails here, before a trainer goes wrong.
"""

from __future__ import annotations

import torch
from trl import GRPOTrainer
from trl.trainer.utils import RepeatSampler

from mlgrpo.trainers.trl_hooks import (
    EpochSeekingRepeatSampler, PolicyLogpsCapture, completion_log_rows, drop_round_metrics, replace_advantage_logs,
    replace_completion_logs, set_group_size,
)  # fmt: skip

from .conftest import grpo_args, length_reward


class CountingTRL(GRPOTrainer):
    """Stock TRL, recording each call of the log-prob helper and the state one generation batch leaves."""

    calls: list

    def _get_per_token_logps_and_entropies(self, model, *args, **kwargs):
        out = super()._get_per_token_logps_and_entropies(model, *args, **kwargs)
        self.calls.append((self._in_loss, torch.is_grad_enabled(), out[0]))
        return out

    def _compute_loss(self, model, inputs):
        self._in_loss = True
        try:
            return super()._compute_loss(model, inputs)
        finally:
            self._in_loss = False

    def _generate_and_score_completions(self, inputs):
        before = {name: len(self._metrics["train"][name]) for name in ("reward_std", "frac_reward_zero_std")}
        output = super()._generate_and_score_completions(inputs)
        after = {name: len(self._metrics["train"][name]) for name in before}
        self.generations.append((before, after, list(self._logs["advantages"]), output["advantages"].tolist()))
        self.tables.append(([x["prompt"] for x in inputs], completion_log_rows(self, len(inputs))))
        return output


def counting_trainer(tmp_path, make_model, tokenizer, dataset, **args) -> CountingTRL:
    trainer = CountingTRL(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, **args),
                          train_dataset=dataset, processing_class=tokenizer)
    trainer.calls, trainer.generations, trainer.tables, trainer._in_loss = [], [], [], False
    return trainer


def test_the_loss_computes_the_policy_logps_in_one_call_with_gradient(tmp_path, make_model, tokenizer, dataset):
    # steps_per_generation 2 > gradient_accumulation_steps 1: TRL also computes old log-probs, without gradient
    trainer = counting_trainer(tmp_path, make_model, tokenizer, dataset, max_steps=2, steps_per_generation=2)
    trainer.train()
    in_loss = [(grad, logps) for inside, grad, logps in trainer.calls if inside]
    assert len(in_loss) == 2 and all(grad and logps.requires_grad for grad, logps in in_loss)  # one per micro-batch
    assert all(not grad for inside, grad, _ in trainer.calls if not inside)


def test_a_generation_appends_one_reward_std_and_logs_the_gathered_advantages(tmp_path, make_model, tokenizer,
                                                                              dataset):
    trainer = counting_trainer(tmp_path, make_model, tokenizer, dataset, max_steps=2)
    trainer.train()
    assert len(trainer.generations) == 2
    for before, after, logged, advantages in trainer.generations:
        assert all(after[name] == before[name] + 1 for name in before)
        assert logged[-len(advantages):] == advantages  # one process: the gathered batch is the local one


def test_a_generation_extends_the_completions_table_by_its_rows_and_they_can_be_replaced(tmp_path, make_model,
                                                                                        tokenizer, dataset):
    # Dynamic sampling rewrites the table with the rows trained on (trainers/dynamic.py).
    trainer = counting_trainer(tmp_path, make_model, tokenizer, dataset, max_steps=2)
    trainer.train()
    for prompts, table in trainer.tables:
        assert set(table) == {("prompt",), ("completion",), ("rewards", "length_reward")}  # no images: left out
        assert table[("prompt",)] == prompts and all(len(column) == len(prompts) for column in table.values())
    prompts, table = trainer.tables[-1]
    replace_completion_logs(trainer, {key: column[::-1] for key, column in table.items()}, len(prompts))
    assert list(trainer._logs["prompt"]) == prompts[::-1]
    assert list(trainer._logs["rewards"]["length_reward"]) == table[("rewards", "length_reward")][::-1]
    for name in ("reward_std", "frac_reward_zero_std"):  # three scored batches' statistics; two of them dropped
        trainer._metrics["train"][name].extend([1.0, 2.0, 3.0])
    drop_round_metrics(trainer, "train", 2)
    assert trainer._metrics["train"]["reward_std"] == [1.0] == trainer._metrics["train"]["frac_reward_zero_std"]


def test_capture_and_replacement_act_on_a_real_trainer(tmp_path, make_model, tokenizer, dataset):
    class Capturing(PolicyLogpsCapture, GRPOTrainer):
        def _compute_loss(self, model, inputs):
            with self.capturing_policy_logps() as found:
                loss = super()._compute_loss(model, inputs)
            self.found = getattr(self, "found", []) + [len(found)]
            return loss

    trainer = Capturing(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=1),
                        train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    assert trainer.found == [1] and trainer._captured_logps is None
    n = len(trainer._logs["advantages"])
    for name in ("reward_std", "frac_reward_zero_std"):  # the log at the step's end emptied them: as if generated
        trainer._metrics["train"][name].append(9.0)
    replace_advantage_logs(trainer, "train", [0.5] * n, reward_std=2.0, frac_zero_std=0.25)
    assert n == 8 and list(trainer._logs["advantages"]) == [0.5] * n
    assert trainer._metrics["train"]["reward_std"] == [2.0] and trainer._metrics["train"]["frac_reward_zero_std"] == [0.25]


def test_epoch_seeking_sampler_draws_trls_order_from_any_epoch(dataset):
    def order(sampler, epoch):
        sampler.set_epoch(epoch)
        return list(sampler)

    stock = RepeatSampler(dataset, mini_repeat_count=4, batch_size=2, repeat_count=1, shuffle=True, seed=3)
    expected = [list(stock) for _ in range(3)]  # TRL draws epochs 0, 1, 2 from one generator
    seeking = EpochSeekingRepeatSampler(dataset, mini_repeat_count=4, batch_size=2, repeat_count=1, shuffle=True, seed=3)
    assert order(seeking, 2) == expected[2] and order(seeking, 0) == expected[0]


def test_trl_groups_a_rollout_by_the_group_size_set_just_before_it(tmp_path, make_model, tokenizer, dataset):
    # Built with groups of 4; set to 8 before a generation of two prompts' 4 copies each: TRL's advantages
    # are then those of one group of 8 (a value it cached would have given two groups of 4).
    trainer = counting_trainer(tmp_path, make_model, tokenizer, dataset, max_steps=1)
    trainer.model.train()
    set_group_size(trainer, 8)
    output = trainer._generate_and_score_completions([dataset[0]] * 4 + [dataset[1]] * 4)
    rewards = torch.tensor(list(trainer._logs["rewards"]["length_reward"])[-8:])
    expected = (rewards - rewards.mean()) / (rewards.std() + 1e-4)  # TRL: ddof 1, eps 1e-4
    assert torch.allclose(output["advantages"], expected, atol=1e-5)
    assert rewards[:4].mean() != rewards[4:].mean()  # two groups of 4 would have given other advantages
