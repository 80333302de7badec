"""MultilingualGRPOTrainer: equal to stock TRL in compatibility mode, language-aware otherwise."""

from __future__ import annotations

import os
import re
import signal

import pytest
import torch
from transformers import TrainerCallback
from trl import GRPOTrainer

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.sampling import SamplerConfig
from mlgrpo.trainers import AlgorithmConfig, KLConfig, MultilingualGRPOTrainer

from .conftest import LANGUAGES, grpo_args, length_reward


class RecordingTrainer(MultilingualGRPOTrainer):
    """Keeps TRL's own advantages next to ours for every generation batch."""

    def _advantages(self, rewards, keys, output, local):
        trl_advantages = output["advantages"].clone()
        ours = super()._advantages(rewards, keys, output, local)
        self.pairs = getattr(self, "pairs", []) + [(trl_advantages, ours.local.clone())]
        return ours


def params(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in model.parameters()])


def test_compatibility_mode_equals_stock_trl(tmp_path, make_model, tokenizer, dataset):
    stock_model, our_model = make_model(), make_model()
    start = params(stock_model)
    assert torch.equal(start, params(our_model))
    # lr 1e-5 (TRL's default is 1e-6): Adam turns a gradient element that is ~0 into a step of ~lr, so
    # the last-bit differences between the registry's scatter sums and TRL's reshaped means (<= 2.4e-7
    # in the advantages) move such elements by up to ~lr; at lr 1e-3 a handful ended 1.1e-6 apart. At
    # 1e-5 one step is 10x the 1e-6 tolerance and the parameters move ~3e-5, so a wrong advantage shows.
    stock_args, our_args = (grpo_args(tmp_path / name, max_steps=5, learning_rate=1e-5) for name in ("stock", "ours"))
    GRPOTrainer(model=stock_model, reward_funcs=[length_reward], args=stock_args,
                train_dataset=dataset, processing_class=tokenizer).train()
    ours = RecordingTrainer(model=our_model, reward_funcs=[length_reward], args=our_args,
                            train_dataset=dataset, processing_class=tokenizer, algorithm=AlgorithmConfig())
    ours.train()
    # Same batch, same advantages: TRL's inline computation and the registry's grpo estimator.
    assert len(ours.pairs) == 5
    for trl_adv, our_adv in ours.pairs:
        torch.testing.assert_close(our_adv, trl_adv, rtol=0, atol=1e-6)
    # Same five steps, same parameters; and they did move.
    assert (params(stock_model) - start).abs().max() > 1e-5
    assert (params(our_model) - params(stock_model)).abs().max() <= 1e-6


def test_per_language_metrics_are_logged_and_parameters_change(tmp_path, make_model, tokenizer, dataset):
    model = make_model()
    start = params(model)
    trainer = MultilingualGRPOTrainer(
        model=model, reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=4, per_device_train_batch_size=16),
        train_dataset=dataset, processing_class=tokenizer,
        algorithm=AlgorithmConfig(advantage=AdvantageConfig(group_by="prompt", std_scope="language")),
        sampler=SamplerConfig(name="balanced", seed=0),
    )
    trainer.train()
    assert (params(model) - start).abs().max() > 1e-4
    logged = {k for entry in trainer.state.log_history for k in entry}
    for lang in LANGUAGES:  # the balanced sampler draws every language within 4 steps of 4 prompts
        assert f"reward/{lang}" in logged and f"adv/mean/{lang}" in logged and f"sampler/drawn/{lang}" in logged
        assert f"rewards/length_reward/{lang}" in logged
    assert "language_consistency/ja" in logged
    for name in ("adv/zero_std_groups", "adv/nonfinite_rewards", "system/samples_per_sec",
                 "system/tokens_per_sec", "system/peak_memory_mb", "entropy", "clip_ratio/region_mean"):
        assert name in logged
    # The trainer drew through the language sampler (its shares are tested in tests/sampling).
    drawn = trainer._language_sampler.language_counts()
    assert set(drawn) == set(LANGUAGES) and sum(drawn.values()) >= 4 * 4


def test_missing_language_column_is_a_clear_error(tmp_path, make_model, tokenizer, dataset):
    from mlgrpo.errors import UserError

    with pytest.raises(UserError, match="no 'language' column"):
        MultilingualGRPOTrainer(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path),
                                train_dataset=dataset.remove_columns("language"), processing_class=tokenizer)


class GradientAtStep(TrainerCallback):
    """The accumulated gradients of the first optimiser step, and the rollout they came from."""

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        if state.global_step == 0:
            self.grads = torch.cat([p.grad.detach().flatten().clone() for p in model.parameters()])


def regularised_run(tmp_path, make_model, tokenizer, dataset, coef: float):
    """One optimiser step over a rollout of 4 prompts x 4 completions in two shuffled micro-batches."""
    probe = GradientAtStep()
    model = make_model()
    forwards = []
    model.register_forward_hook(lambda module, inputs, output: forwards.append(torch.is_grad_enabled()))
    cfg = AlgorithmConfig(advantage=AdvantageConfig(mix_lambda=0.5, inter_group_coef=coef))
    trainer = MultilingualGRPOTrainer(
        model=model, reward_funcs=[length_reward], train_dataset=dataset, processing_class=tokenizer, algorithm=cfg,
        args=grpo_args(tmp_path / str(coef), max_steps=1, gradient_accumulation_steps=2, steps_per_generation=2,
                       max_grad_norm=0.0, learning_rate=1e-6), callbacks=[probe])
    trainer.train()
    return probe.grads, trainer.buffered_rollout, forwards


def test_inter_group_regulariser_has_the_whole_group_gradient_at_weight_coef(tmp_path, make_model, tokenizer,
                                                                             dataset):
    coef = 2.0
    plain, rollout, plain_forwards = regularised_run(tmp_path, make_model, tokenizer, dataset, 0.0)
    regularised, same_rollout, forwards = regularised_run(tmp_path, make_model, tokenizer, dataset, coef)
    assert torch.equal(torch.cat([b.advantages for b in rollout]), torch.cat([b.advantages for b in same_rollout]))
    # The regulariser coef * var_g(mean_{i in g} ratio_i A_i) over whole prompt groups, differentiated at the
    # rollout's policy on the whole rollout at once (the step split it into two micro-batches of fragments).
    from mlgrpo.algorithms import inter_group_variance

    batch = {k: torch.cat([getattr(b, k) for b in rollout]) for k in ("prompt_ids", "prompt_mask", "completion_ids",
                                                             "completion_mask", "advantages")}
    reference = MultilingualGRPOTrainer(
        model=make_model(), reward_funcs=[length_reward], train_dataset=dataset, processing_class=tokenizer,
        args=grpo_args(tmp_path / "reference", max_steps=1))
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    logps, _, _ = reference._get_per_token_logps_and_entropies(reference.model, ids, attention,
                                                                batch["completion_ids"].size(1))
    mask = batch["completion_mask"]
    ratio = torch.exp(((logps - logps.detach()) * mask).sum(-1) / mask.sum(-1).clamp(min=1))
    groups = torch.unique(batch["prompt_ids"], dim=0, return_inverse=True)[1]
    assert groups.unique().numel() == 4 and groups[:8].unique().numel() > 1  # fragments in each micro-batch
    variance = inter_group_variance(ratio * batch["advantages"], groups)
    assert variance.item() > 1e-4  # the mix with absolute rewards gives the groups different means
    (coef * variance).backward()
    expected = torch.cat([p.grad.flatten() for p in reference.model.parameters()])
    assert expected.abs().max() > 1e-4
    torch.testing.assert_close(regularised - plain, expected, rtol=1e-4, atol=1e-6)
    # and from the log-probs the policy loss already computed: no second forward pass of the policy
    assert sum(forwards) == sum(plain_forwards) == 2


def test_gae_without_critic_is_refused():
    from mlgrpo.errors import UserError

    with pytest.raises(UserError, match="needs a critic"):
        AlgorithmConfig(name="grpo", advantage=AdvantageConfig(estimator="gae"))
    with pytest.raises(UserError, match="per-token estimator"):
        AlgorithmConfig(name="ppo", advantage=AdvantageConfig(estimator="grpo"))


def test_reward_stratified_sampler_receives_the_rewards(tmp_path, make_model, tokenizer, dataset):
    trainer = MultilingualGRPOTrainer(
        model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=2),
        train_dataset=dataset, processing_class=tokenizer, sampler=SamplerConfig(name="uniform", reward_buckets=2),
    )
    trainer.train()
    sampler = trainer._language_sampler
    # 2 steps x 2 prompts x G=4 completions, each reward credited to its dataset row
    assert int(sampler._reward_n.sum()) == 16 and sampler._version == 2


def half_nan_reward(completions, **kwargs):
    return [float("nan") if i % 2 else 1.0 + len(c) / 10 for i, c in enumerate(completions)]


def test_bad_rewards_are_counted_and_zeroed_or_fatal(tmp_path, make_model, tokenizer, dataset):
    from mlgrpo.rewards import BadRewardError, RewardGuard

    guard = RewardGuard("zero")
    model = make_model()
    start = params(model)
    trainer = MultilingualGRPOTrainer(model=model, reward_funcs=[guard.wrap(half_nan_reward, "half_nan")],
                                      args=grpo_args(tmp_path, max_steps=2), train_dataset=dataset,
                                      processing_class=tokenizer, reward_guard=guard)
    trainer.train()
    steps = [entry for entry in trainer.state.log_history if "reward_guard/half_nan/nan" in entry]
    assert len(steps) == 2 and all(entry["reward_guard/half_nan/nan"] == 4 for entry in steps)  # 8 rows, half NaN
    assert torch.isfinite(params(model)).all() and (params(model) - start).abs().max() > 0

    fatal = RewardGuard("fail")
    trainer = MultilingualGRPOTrainer(model=make_model(), reward_funcs=[fatal.wrap(half_nan_reward, "half_nan")],
                                      args=grpo_args(tmp_path / "fail", max_steps=1), train_dataset=dataset,
                                      processing_class=tokenizer, reward_guard=fatal)
    with pytest.raises(BadRewardError, match="half_nan"):
        trainer.train()


class CapturingTrainer(MultilingualGRPOTrainer):
    """Keeps each generation batch's completions and languages, as the reward functions saw them."""

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        self.batches = getattr(self, "batches", []) + [(list(completions), [x["language"] for x in inputs])]
        return super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)


def test_language_consistency_measured_in_the_background_lands_in_its_own_step(tmp_path, make_model, tokenizer,
                                                                               dataset):
    from mlgrpo.rewards.language import language_consistency

    trainer = CapturingTrainer(model=make_model(), reward_funcs=[length_reward],
                               args=grpo_args(tmp_path, max_steps=3, per_device_train_batch_size=16, logging_steps=1),
                               train_dataset=dataset, processing_class=tokenizer,
                               sampler=SamplerConfig(name="balanced", seed=0))
    trainer.train()
    steps = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(steps) == len(trainer.batches) == 3 and not trainer._pending_consistency
    candidates = sorted(set(dataset["language"]))
    for entry, (completions, languages) in zip(steps, trainer.batches):
        values = language_consistency([""] * len(completions), completions, language=languages, candidates=candidates)
        for lang in LANGUAGES:
            mine = [v for v, row in zip(values, languages) if row == lang and v is not None]
            key = f"language_consistency/{lang}"
            if mine:
                assert entry[key] == pytest.approx(sum(mine) / len(mine), abs=1e-6), (entry["step"], lang)
            else:
                assert entry.get(key) is None, (entry["step"], lang)


def test_language_consistency_is_logged_with_every_log_of_rewards(tmp_path, make_model, tokenizer, dataset):
    # Rollouts every 2 steps (0, 2, 4), logs every 3 (3, 6): the rollout of step 4 is generated at no logging
    # step. Issue 25: measured only on the batches generated at a logging step, the log of step 6 had
    # rewards but no language consistency.
    trainer = MultilingualGRPOTrainer(model=make_model(), reward_funcs=[length_reward],
                                      args=grpo_args(tmp_path, max_steps=6, logging_steps=3, steps_per_generation=2),
                                      train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if any(k.startswith("reward/") for k in entry)]
    assert [entry["step"] for entry in logs] == [3, 6]
    for entry in logs:
        assert any(entry.get(f"language_consistency/{lang}") is not None for lang in LANGUAGES), entry["step"]


class KeyRecordingTrainer(MultilingualGRPOTrainer):
    def _advantages(self, rewards, keys, output, local):
        self.seen = getattr(self, "seen", []) + [(keys, output["prompt_mask"].sum(1), output["completion_mask"].sum(1))]
        return super()._advantages(rewards, keys, output, local)


def test_group_key_lengths_are_prompt_tokens_and_completion_lengths_completion_tokens(tmp_path, make_model, tokenizer,
                                                                                      dataset):
    # Issue 25: GroupKeys.lengths held completion tokens, so length_bucket grouped rows by the length of the
    # sampled action, which biases the baseline; it is the prompt's length now, as its grouping documents.
    trainer = KeyRecordingTrainer(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=1),
                                  train_dataset=dataset, processing_class=tokenizer,
                                  algorithm=AlgorithmConfig(advantage=AdvantageConfig(group_by="length_bucket",
                                                                                      length_edges=(4, 8, 12))))
    trainer.train()
    (keys, prompt_tokens, completion_tokens), = trainer.seen
    assert keys.lengths.tolist() == prompt_tokens.tolist()
    assert keys.completion_lengths.tolist() == completion_tokens.tolist()
    assert prompt_tokens.tolist() != completion_tokens.tolist()


class HelperKiller(TrainerCallback):
    """Step 1: stops the language-consistency helper before the step's generation and kills it before the
    step logs, so the step's measurement is certainly pending when the helper dies."""

    def on_step_begin(self, args, state, control, **kwargs):
        from mlgrpo.rewards.helper import service

        if state.global_step == 0:
            os.kill(service().pid, signal.SIGSTOP)

    def on_step_end(self, args, state, control, **kwargs):
        from mlgrpo.rewards.helper import service

        if state.global_step == 1:
            os.kill(service().pid, signal.SIGKILL)


def test_a_helper_that_dies_mid_step_costs_that_step_its_consistency_and_training_goes_on(
        tmp_path, make_model, tokenizer, dataset, caplog):
    trainer = MultilingualGRPOTrainer(model=make_model(), reward_funcs=[length_reward],
                                      args=grpo_args(tmp_path, max_steps=2, logging_steps=1, per_device_train_batch_size=16),
                                      train_dataset=dataset, processing_class=tokenizer,
                                      sampler=SamplerConfig(name="balanced", seed=0), callbacks=[HelperKiller()])
    with caplog.at_level("WARNING", logger="mlgrpo.trainers.grpo"):
        trainer.train()
    assert trainer.state.global_step == 2 and trainer._consistency_failures == 1
    warned = [r.getMessage() for r in caplog.records if "language consistency of step" in r.getMessage()]
    assert len(warned) == 1 and "exited with code -9" in warned[0]
    first, second = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert all(first.get(f"language_consistency/{lang}") is None for lang in LANGUAGES)
    assert any(second.get(f"language_consistency/{lang}") is not None for lang in LANGUAGES)  # a new helper


@pytest.mark.parametrize("kl, beta, words", [
    (KLConfig(coef=0.05), 0.0, "GRPOConfig.beta=0.0 but kl.coef=0.05 (loss)"),  # declared, applied never
    (KLConfig(), 0.1, "GRPOConfig.beta=0.1 but kl.coef=0.0 (off)"),  # applied, declared nowhere
])
def test_a_kl_that_would_act_at_another_weight_than_declared_is_refused(tmp_path, make_model, tokenizer, dataset,
                                                                          kl, beta, words):
    from mlgrpo.errors import UserError

    with pytest.raises(UserError, match=re.escape(words)):
        MultilingualGRPOTrainer(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, beta=beta),
                                train_dataset=dataset, processing_class=tokenizer, kl=kl)
    make_model().save_pretrained(tmp_path / "policy")  # TRL loads its reference model by the policy's name
    trainer = MultilingualGRPOTrainer(model=str(tmp_path / "policy"), reward_funcs=[length_reward],
                                      train_dataset=dataset, args=grpo_args(tmp_path, beta=0.05),
                                      processing_class=tokenizer, kl=KLConfig(coef=0.05))
    assert trainer.beta == 0.05 and trainer.ref_model is not None  # TRL's own KL term, at the declared weight


@pytest.mark.parametrize("setting, value, words", [
    ("multi_objective_aggregation", "normalize_then_sum", "set AlgorithmConfig.advantage.objective_weights"),
    ("scale_rewards", "batch", "set AlgorithmConfig.advantage.std_scope"),
])
def test_trl_settings_the_advantages_replace_are_refused(tmp_path, make_model, tokenizer, dataset, setting, value,
                                                         words):
    from mlgrpo.errors import UserError

    with pytest.raises(UserError, match=f"GRPOConfig.{setting}='{value}' would be ignored: .*{words}"):
        MultilingualGRPOTrainer(model=make_model(), reward_funcs=[length_reward], train_dataset=dataset,
                                args=grpo_args(tmp_path, **{setting: value}), processing_class=tokenizer)


def prompt_length_reward(completions, prompts, **kwargs):
    """The same reward for every completion of a prompt: TRL's prompt groups all have zero spread."""
    return [float(len(p) % 5) for p in prompts]


class KeepingTrainer(MultilingualGRPOTrainer):
    def _advantages(self, rewards, keys, output, local):
        result = super()._advantages(rewards, keys, output, local)
        self.kept = getattr(self, "kept", []) + [(result.per_row.tolist(), float(result.metrics["adv/frac_zero_std"]))]
        return result


def test_trls_advantage_logs_describe_the_advantages_trained_on(tmp_path, make_model, tokenizer, dataset):
    cfg = AlgorithmConfig(advantage=AdvantageConfig(group_by="language", std_scope="language"))
    trainer = KeepingTrainer(model=make_model(), reward_funcs=[prompt_length_reward], train_dataset=dataset,
                             args=grpo_args(tmp_path, max_steps=1, per_device_train_batch_size=16, logging_steps=1),
                             processing_class=tokenizer, algorithm=cfg, sampler=SamplerConfig(name="balanced", seed=0))
    trainer.train()
    (advantages, frac_zero), = trainer.kept
    # TRL's prompt groups have no spread (TRL would log frac 1.0 and advantage 0 for all); the language
    # groups do, so the advantages trained on are not 0.
    assert frac_zero < 1.0 and any(a != 0 for a in advantages)
    assert list(trainer._logs["advantages"]) == advantages  # the completions table's column
    logged = next(entry for entry in trainer.state.log_history if "frac_reward_zero_std" in entry)
    assert logged["frac_reward_zero_std"] == pytest.approx(frac_zero)
    assert logged["frac_reward_zero_std"] == pytest.approx(logged["adv/frac_zero_std"])
