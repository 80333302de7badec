"""Pins what mlgrpo/trainers/trl_adapter.py relies on, against stock trl.GRPOTrainer (trl 1.16).

If a TRL upgrade moves one of these, the test named after it fails here, before a trainer goes wrong: the
signatures of the private methods the adapter overrides, the behaviour behind each, and that no other
module of mlgrpo overrides a private TRL/HF method or reads a private TRL/HF attribute.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
import transformers
import trl
from trl import GRPOTrainer
from trl.trainer.utils import RepeatSampler

import mlgrpo
import mlgrpo.trainers
from mlgrpo.trainers.trl_adapter import (
    PRIVATE_METHODS, PRIVATE_OVERRIDES, EpochSeekingRepeatSampler, TRLAdapter, check_contract, completion_log_rows, drop_round_metrics,
    replace_advantage_logs, replace_completion_logs, set_group_size,
)  # fmt: skip

from .conftest import StepsTrained, grpo_args, length_reward


class CountingTRL(GRPOTrainer):
    """Stock TRL, recording the state one generation batch leaves."""

    def _generate_and_score_completions(self, inputs):
        before = {name: len(self._metrics["train"][name]) for name in ("reward_std", "frac_reward_zero_std")}
        output = super()._generate_and_score_completions(inputs)
        after = {name: len(self._metrics["train"][name]) for name in before}
        self.generations.append((before, after, list(self._logs["advantages"]), output["advantages"].tolist()))
        self.tables.append(([x["prompt"] for x in inputs], completion_log_rows(self, len(inputs))))
        return output


# ---- the contract: signatures, and nothing private outside the adapter ---------------------------------


def test_the_installed_trl_declares_the_private_methods_the_adapter_overrides_as_written():
    assert check_contract(GRPOTrainer) == []
    overridden = {name for name, value in vars(TRLAdapter).items()
                  if name.startswith("_") and not name.startswith("__") and callable(value) and hasattr(GRPOTrainer, name)}
    assert overridden == set(PRIVATE_OVERRIDES) and len(overridden) == 3


def test_a_changed_signature_is_named_with_what_changed():
    class NewerTRL(GRPOTrainer):
        def _compute_loss(self, model, inputs, num_items=None):
            return super()._compute_loss(model, inputs)

    bare = type("Bare", (), {})  # a trainer class without any of them
    problems = check_contract(NewerTRL)
    assert problems == ["NewerTRL._compute_loss(self, model, inputs, num_items=None) changed from "
                        "_compute_loss(self, model, inputs), which mlgrpo/trainers/trl_adapter.py relies on: check what "
                        "TRL's new version does there"]
    assert len(check_contract(bare)) == len(PRIVATE_METHODS)
    assert all("no longer exists" in line for line in check_contract(bare))


def trl_private_names() -> set[str]:
    """Every `self._name` that TRL's GRPOTrainer or HF's Trainer uses (methods and attributes)."""
    names = set()
    for path in (Path(trl.__file__).parent / "trainer" / "grpo_trainer.py", Path(transformers.__file__).parent / "trainer.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                names.add(node.attr)
    return names


def test_no_module_but_the_adapter_touches_trl_privately():
    private = trl_private_names()
    assert {"_metrics", "_logs", "_step", "_buffered_inputs", "_compute_loss", "_prepare_inputs"} <= private
    found = []
    for path in sorted(Path(mlgrpo.__file__).parent.rglob("*.py")):
        if path.name == "trl_adapter.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in private:
                found.append(f"{path.name}:{node.lineno} reads .{node.attr}")
            if isinstance(node, ast.ClassDef):
                found += [f"{path.name}:{f.lineno} {node.name} overrides {f.name}" for f in node.body
                          if isinstance(f, ast.FunctionDef) and f.name in private]
    assert found == []


@pytest.mark.parametrize("name", sorted(mlgrpo.trainers.TRAINERS))
def test_every_trainer_reaches_trl_through_the_adapter(name):
    cls = mlgrpo.trainers.TRAINERS[name]
    assert issubclass(cls, TRLAdapter)
    for private in PRIVATE_OVERRIDES:  # resolved to the adapter's own, not to a mixin's or TRL's
        assert next(k for k in cls.__mro__ if private in vars(k)) is TRLAdapter, private


def counting_trainer(tmp_path, make_model, tokenizer, dataset, **args) -> CountingTRL:
    trainer = CountingTRL(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, **args),
                          train_dataset=dataset, processing_class=tokenizer)
    trainer.generations, trainer.tables = [], []
    return trainer


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


def test_advantage_log_replacement_acts_on_a_real_trainer(tmp_path, make_model, tokenizer, dataset):
    trainer = TRLAdapter(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=1),
                         train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
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


class PinningAdapter(TRLAdapter):
    """The adapter alone (TRL's behaviour), recording what its hooks receive."""

    def on_rewards(self, inputs, prompts, completions, completion_ids_list, rewards_per_func):
        self.scored = getattr(self, "scored", []) + [(len(inputs), rewards_per_func.clone())]
        return rewards_per_func, len(inputs)

    def rollout(self, inputs):
        output, record = self.trl_rollout(inputs)
        self.records = getattr(self, "records", []) + [record]
        return output

    def save_state(self, folder):
        self.saved = getattr(self, "saved", []) + [folder]


def none_for_odd(completions, **kwargs):
    return [None if i % 2 else 1.0 for i in range(len(completions))]


def test_rewards_arrive_gathered_per_function_and_the_record_returns_with_the_batch(tmp_path, make_model, tokenizer,
                                                                                     dataset):
    # _calculate_rewards: (N, F) over the gathered batch, NaN where a function returned None; what on_rewards
    # made of them comes back from trl_rollout, once per generation. _save_checkpoint: the folder HF wrote.
    import os

    trainer = PinningAdapter(model=make_model(), reward_funcs=[length_reward, none_for_odd],
                             args=grpo_args(tmp_path, max_steps=2, save_strategy="steps", save_steps=1),
                             train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    assert [n for n, _ in trainer.scored] == trainer.records == [8, 8]
    for _, rewards in trainer.scored:
        assert rewards.shape == (8, 2) and torch.isnan(rewards[1::2, 1]).all() and (rewards[0::2, 1] == 1).all()
    assert [os.path.basename(f) for f in trainer.saved] == ["checkpoint-1", "checkpoint-2"]
    assert all(os.path.isfile(os.path.join(f, "trainer_state.json")) for f in trainer.saved)


def test_stock_trl_resumed_from_its_last_steps_checkpoint_trains_one_step_more(tmp_path, make_model, tokenizer, dataset):
    """The HF behaviour TRLAdapter.finished guards against: HF's loop checks max_steps after a step. Should a
    transformers release check first, this fails and the guard can go."""
    def stock(resume=None) -> tuple[GRPOTrainer, StepsTrained]:
        trained = StepsTrained()
        args = grpo_args(tmp_path, max_steps=2, save_strategy="steps", save_steps=2)
        trainer = GRPOTrainer(model=make_model(), reward_funcs=[length_reward], args=args, train_dataset=dataset,
                              processing_class=tokenizer, callbacks=[trained])
        trainer.train(resume_from_checkpoint=resume)
        return trainer, trained

    stock()
    resumed, trained = stock(str(tmp_path / "checkpoint-2"))
    assert resumed.state.global_step == 3 and trained.steps == [3]
