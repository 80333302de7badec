"""DAPO's dynamic sampling in MultilingualGRPOTrainer: constant groups replaced by fresh ones, counted per language."""

from __future__ import annotations

import pytest
import torch

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.errors import UserError
from mlgrpo.sampling import SamplerConfig
from mlgrpo.trainers import AlgorithmConfig, DynamicSampling, MultilingualGRPOTrainer
from mlgrpo.trainers.rollout import prompt_text

from .conftest import grpo_args

CONSTANT = ("ru", "ja", "sw")  # languages whose groups the reward below leaves without spread
G = 4


def language_reward(completions, language, **kwargs):
    """1.0 for every completion of a ja or sw prompt (a constant group); 0, 1, 2, 3 within any other group
    (each process's rows hold whole groups of G, so row i is completion i % G of its group)."""
    return [1.0 if lang in CONSTANT else float(i % G) for i, lang in enumerate(language)]


def spread_reward(completions, **kwargs):
    return [float(i % G) for i in range(len(completions))]


class Recording(MultilingualGRPOTrainer):
    """Keeps the language of every generated group, and the groups and prompts of every rollout trained on."""

    def on_rewards(self, inputs, prompts, completions, completion_ids_list, rewards_per_func):
        rewards, rows = super().on_rewards(inputs, prompts, completions, completion_ids_list, rewards_per_func)
        self.generated = getattr(self, "generated", []) + [rows.languages[::G]]
        return rewards, rows

    def _language_metrics(self, rows, scalar, keys):
        self.trained = getattr(self, "trained", []) + [(rows.languages[::G], list(rows.prompts))]
        return super()._language_metrics(rows, scalar, keys)


def params(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in model.parameters()])


def dynamic(max_rounds=3, **advantage) -> AlgorithmConfig:
    return AlgorithmConfig(advantage=AdvantageConfig(**advantage),
                           dynamic_sampling=DynamicSampling(enabled=True, max_rounds=max_rounds))


def expected_rollout(batches: list[list[str]], slots: int) -> tuple[list[str], dict[str, dict[str, int]]]:
    """A plain re-enactment of the rule: the first informative groups, then the earliest constant ones; and
    the per-language counts it implies."""
    groups = [lang for batch in batches for lang in batch]
    informative = [i for i, lang in enumerate(groups) if lang not in CONSTANT]
    constant = [i for i, lang in enumerate(groups) if lang in CONSTANT]
    chosen = sorted((informative + constant)[:slots])  # kept in generation order
    counts = {"prompts_generated": {}, "dropped_groups": {}, "readmitted_groups": {}}
    for i, lang in enumerate(groups):
        counts["prompts_generated"][lang] = counts["prompts_generated"].get(lang, 0) + 1
        if lang in CONSTANT:
            kind = "readmitted_groups" if i in chosen else "dropped_groups"
            counts[kind][lang] = counts[kind].get(lang, 0) + 1
    return [groups[i] for i in chosen], counts


@pytest.mark.slow
@pytest.mark.parametrize("max_rounds, accumulation", [(3, 2), (1, 1)])
def test_constant_groups_are_refilled_and_counted_per_language(tmp_path, make_model, tokenizer, dataset, max_rounds,
                                                               accumulation):
    # Rollouts of 2 groups (8 rows) split into 2 micro-batches (steps_per_generation 2): one optimiser step per
    # rollout, or two (accumulation 1: TRL then also computes old log-probs, merged across rounds like the rest).
    # The balanced sampler draws all four languages, three of them constant.
    args = grpo_args(tmp_path, max_steps=8 // accumulation, per_device_train_batch_size=4, steps_per_generation=2,
                     gradient_accumulation_steps=accumulation, logging_steps=1)
    trainer = Recording(model=make_model(), reward_funcs=[language_reward], args=args, train_dataset=dataset,
                        processing_class=tokenizer, algorithm=dynamic(max_rounds),
                        sampler=SamplerConfig(name="balanced", seed=0))
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "dynamic/rounds" in entry]
    assert len(logs) == len(trainer.trained) == 4
    start, refilled, readmitted = 0, 0, 0
    for log, (languages, prompts) in zip(logs, trainer.trained):
        rounds = int(log["dynamic/rounds"])
        batches = trainer.generated[start : start + rounds + 1]
        start += rounds + 1
        chosen, counts = expected_rollout(batches, slots=2)
        assert languages == chosen and len(prompts) == 8  # whole groups, the rollout's usual size
        # Refill rounds run only while the rollout is short of informative groups, and at most max_rounds.
        short = [sum(lang not in CONSTANT for b in batches[: k + 1] for lang in b) < 2 for k in range(rounds + 1)]
        assert all(short[:-1]) and rounds <= max_rounds and (not short[-1] or rounds == max_rounds)
        for kind, per_language in counts.items():
            for lang in ("en", "ru", "ja", "sw"):
                assert log[f"dynamic/{kind}/{lang}"] == per_language.get(lang, 0), (kind, lang)
        assert log["dynamic/surplus_groups"] == sum(lang not in CONSTANT for b in batches for lang in b) - sum(
            lang not in CONSTANT for lang in chosen)
        # TRL's group statistics are of the rollout trained on, once per rollout.
        assert log["frac_reward_zero_std"] == pytest.approx(log["adv/frac_zero_std"])
        refilled += rounds
        readmitted += sum(counts["readmitted_groups"].values())
    # Some rollout needed fresh prompts, and one ran out of rounds and re-admitted constant groups.
    assert start == len(trainer.generated) and refilled > 0 and readmitted > 0
    # The completions table holds the rows trained on, not the last round generated.
    assert [prompt_text(p) for p in trainer._logs["prompt"]] == trainer.trained[-1][1]


def test_enabled_without_constant_groups_trains_exactly_as_off(tmp_path, make_model, tokenizer, dataset):
    runs = {}
    for name, algorithm in (("off", AlgorithmConfig()), ("on", dynamic())):
        model = make_model()
        trainer = MultilingualGRPOTrainer(model=model, reward_funcs=[spread_reward], train_dataset=dataset,
                                          args=grpo_args(tmp_path / name, max_steps=2), processing_class=tokenizer,
                                          algorithm=algorithm)
        trainer.train()
        runs[name] = (params(model), [k for entry in trainer.state.log_history for k in entry])
    assert torch.equal(runs["on"][0], runs["off"][0])
    assert "dynamic/rounds" in runs["on"][1] and not any(k.startswith("dynamic/") for k in runs["off"][1])


@pytest.mark.parametrize("algorithm, words", [
    (dict(name="ppo", advantage=AdvantageConfig(estimator="gae")), "PPO's advantages come from its critic"),
    (dict(name="sft"), "generates no rollouts"),
    (dict(advantage=AdvantageConfig(group_by="language")), "group_by is 'language'"),
    (dict(advantage=AdvantageConfig(mix_lambda=0.5)), "absolute reward's advantage"),
])
def test_dynamic_sampling_is_refused_where_a_constant_group_is_not_signal_free(algorithm, words):
    with pytest.raises(UserError, match=words):
        AlgorithmConfig(**algorithm, dynamic_sampling=DynamicSampling(enabled=True))


def test_settings_are_checked():
    with pytest.raises(UserError, match="max_rounds must be a whole number >= 1"):
        DynamicSampling(enabled=True, max_rounds=0)
    with pytest.raises(UserError, match="enabled is false"):
        DynamicSampling(max_rounds=5)


def test_the_refill_stream_runs_over_epochs_and_replays_to_its_position():
    from trl.trainer.utils import RepeatSampler

    from mlgrpo.trainers.dynamic import RefillStream

    def stream():  # 5 rows, batches of 2 prompts x G=2: an epoch holds 2 batches (TRL drops the odd row)
        return RefillStream(RepeatSampler(list(range(5)), mini_repeat_count=2, batch_size=2, shuffle=True, seed=3), 4)

    first = stream()
    batches = [first.next() for _ in range(5)]
    assert all(len(b) == 4 and b[0] == b[1] and b[2] == b[3] for b in batches)  # each prompt G times in a row
    assert len({b[0] for b in batches[:2]} | {b[2] for b in batches[:2]}) == 4  # one epoch: 4 distinct rows
    resumed = stream()
    resumed.seek(3)
    assert resumed.drawn == 3 and [resumed.next() for _ in range(2)] == batches[3:]


def test_rounds_of_other_widths_are_padded_on_their_own_side():
    from mlgrpo.trainers.dynamic import _pad_to_widest

    prompts = [torch.tensor([[7, 8]]), torch.tensor([[5, 6, 9]])]  # prompts: left-padded, as TRL pads them
    assert [t.tolist() for t in _pad_to_widest(prompts, 0, left=True)] == [[[0, 7, 8]], [[5, 6, 9]]]
    masks = [torch.tensor([[1, 1, 1]]), torch.tensor([[1]])]  # completions: right-padded
    assert [t.tolist() for t in _pad_to_widest(masks, 0, left=False)] == [[[1, 1, 1]], [[1, 0, 0]]]
    rows = [torch.tensor([0.5]), torch.tensor([1.5])]  # (B,) fields are left as they are
    assert _pad_to_widest(rows, 0, left=False) == rows
