"""PPOTrainer: a critic that learns, GAE advantages per token, critic checkpoints, LoRA on the policy only."""

from __future__ import annotations

import copy

import pytest
import torch
from safetensors.torch import load_file
from transformers import TrainerCallback

from mlgrpo.algorithms import AdvantageConfig
from mlgrpo.errors import UserError
from mlgrpo.trainers import AlgorithmConfig, KLConfig, PPOSettings, PPOTrainer
from mlgrpo.trainers.ppo import CRITIC_OPTIMIZER, CRITIC_SCHEDULER, CRITIC_WEIGHTS

from .conftest import grpo_args, length_reward


def ppo(**settings) -> AlgorithmConfig:
    return AlgorithmConfig(name="ppo", advantage=AdvantageConfig(estimator="gae", std_scope="batch"),
                           ppo=PPOSettings(**settings))


def critic_vector(trainer) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in trainer.critic.parameters()])


KL = KLConfig(coef=0.05, estimator="k1")  # classic RLHF: k1 per token in the reward


class RecordingPPO(PPOTrainer):
    def _advantages(self, rewards, keys, output, local):
        result = super()._advantages(rewards, keys, output, local)
        self.seen = getattr(self, "seen", []) + [(result.local.clone(), output["completion_mask"].clone(),
                                                  result.returns.clone(), result.value_mask.clone())]
        return result


def test_ppo_trains_policy_and_critic_with_per_token_advantages(tmp_path, make_model, tokenizer, dataset):
    model = make_model()
    start = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    trainer = RecordingPPO(model=model, reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=3),
                           train_dataset=dataset, processing_class=tokenizer, algorithm=ppo(), kl=KL)
    critic_start = critic_vector(trainer)
    trainer.train()
    assert (critic_vector(trainer) - critic_start).abs().max() > 1e-5
    assert (torch.cat([p.detach().flatten() for p in model.parameters()]) - start).abs().max() > 1e-5
    advantages, mask, returns, _ = trainer.seen[0]
    assert advantages.dim() == 2 and advantages.shape == mask.shape  # per token
    assert torch.all(advantages[mask == 0] == 0)
    # Whitened over the batch's completion tokens: mean 0, std 1 (ddof 1, eps 1e-4).
    kept = advantages[mask == 1]
    assert abs(kept.mean().item()) < 1e-5 and abs(kept.std().item() - 1) < 1e-3
    # The critic starts at 0 (zero head), so the first returns are the token rewards summed from t on.
    logged = {k for entry in trainer.state.log_history for k in entry}
    for name in ("ppo/value_loss", "ppo/explained_variance", "ppo/value_clipfrac", "ppo/kl_penalty", "reward/en"):
        assert name in logged
    # Same rollout budget as GRPO: G completions per prompt.
    assert advantages.shape[0] == grpo_args(tmp_path).per_device_train_batch_size


def test_rollout_forwards_without_gradient_run_in_micro_batches_and_the_reference_is_the_callers(
        tmp_path, make_model, tokenizer, dataset):
    # Issue 25: the critic's values and the reference's log-probs of a rollout were one forward over all of
    # its rows (here 16 = 8 per micro-batch x 2 steps per generation), and PPO deep-copied the initial policy
    # although the caller already held a frozen copy (for evaluation's KL).
    model = make_model()
    frozen = copy.deepcopy(model).eval().requires_grad_(False)
    rows = {"critic": [], "reference": []}
    trainer = PPOTrainer(model=model, reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=2, steps_per_generation=2),
                         train_dataset=dataset, processing_class=tokenizer, algorithm=ppo(), kl=KL, reference_model=frozen)
    assert trainer._kl_reference is frozen
    critic = trainer.accelerator.unwrap_model(trainer.critic)
    for name, module in (("critic", critic), ("reference", frozen)):
        module.register_forward_pre_hook(
            lambda m, args, kwargs, name=name: rows[name].append(
                None if torch.is_grad_enabled() else (args[0] if args else kwargs["input_ids"]).shape[0]),
            with_kwargs=True)
    trainer.train()
    assert [n for n in rows["critic"] if n is not None] == [8, 8]  # one rollout of 16 rows, in two forwards
    assert rows["reference"] == [8, 8]


class ResumeProbe(PPOTrainer):
    """Snapshots the critic and its optimiser right after a resume loaded them."""

    def load_state(self, checkpoint):
        super().load_state(checkpoint)
        self.loaded_critic = critic_vector(self)
        self.loaded_optimizer = copy.deepcopy(self.critic_optimizer.state_dict())
        self.loaded_schedule = copy.deepcopy(self.critic_scheduler.state_dict())


def test_critic_is_saved_and_restored_with_checkpoints(tmp_path, make_model, tokenizer, dataset):
    args = grpo_args(tmp_path, max_steps=2, save_strategy="steps", save_steps=2)
    first = PPOTrainer(model=make_model(), reward_funcs=[length_reward], args=args, train_dataset=dataset,
                       processing_class=tokenizer, algorithm=ppo())
    first.train()
    checkpoint = tmp_path / "checkpoint-2"
    saved = load_file(str(checkpoint / CRITIC_WEIGHTS))
    assert (checkpoint / CRITIC_OPTIMIZER).exists() and (checkpoint / CRITIC_SCHEDULER).exists()
    for name, value in first.critic.state_dict().items():
        torch.testing.assert_close(saved[name], value)
    # Resume: a fresh trainer (fresh critic) loads the critic and its optimiser from the checkpoint.
    resumed = ResumeProbe(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=3),
                          train_dataset=dataset, processing_class=tokenizer, algorithm=ppo())
    assert not torch.equal(critic_vector(resumed), critic_vector(first))
    resumed.train(resume_from_checkpoint=str(checkpoint))
    assert torch.equal(resumed.loaded_critic, critic_vector(first))
    first_state = first.critic_optimizer.state_dict()["state"]
    for index, state in resumed.loaded_optimizer["state"].items():
        torch.testing.assert_close(state["exp_avg"], first_state[index]["exp_avg"])
    assert resumed.loaded_schedule == first.critic_scheduler.state_dict()  # the critic's schedule at step 2
    assert resumed.state.global_step == 3


def test_the_critic_has_its_own_schedule_of_the_policys_type_and_warmup(tmp_path, make_model, tokenizer, dataset):
    # cosine with 2 warm-up steps over 4, the rate each step used (as HF logs it): factors 0/2, 1/2, then
    # (1 + cos(0))/2 = 1 and (1 + cos(pi/2))/2 = 1/2, of 1e-3 for the policy and of 1e-2 for the critic
    args = grpo_args(tmp_path, max_steps=4, learning_rate=1e-3, lr_scheduler_type="cosine", warmup_steps=2)
    trainer = PPOTrainer(model=make_model(), reward_funcs=[length_reward], args=args, train_dataset=dataset,
                         processing_class=tokenizer, algorithm=ppo(value_learning_rate=1e-2))
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "ppo/critic_learning_rate" in entry]
    assert len(logs) == 4
    for entry in logs:
        assert entry["ppo/critic_learning_rate"] == pytest.approx(10 * entry["learning_rate"], rel=1e-6)
    assert [entry["learning_rate"] for entry in logs] == pytest.approx([0.0, 5e-4, 1e-3, 5e-4])
    assert trainer.critic_optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


def test_value_head_on_the_policy_backbone(tmp_path, make_model, tokenizer, dataset):
    model = make_model()
    trainer = PPOTrainer(model=model, reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=2),
                         train_dataset=dataset, processing_class=tokenizer, algorithm=ppo(value_model="head"))
    assert trainer.critic.backbone is model.model  # shared, not copied
    assert [id(p) for p in trainer._critic_params] == [id(p) for p in trainer.critic.head.parameters()]
    head_start = critic_vector(trainer)[-33:].clone()
    trainer.train()
    assert (critic_vector(trainer)[-33:] - head_start).abs().max() > 0


def test_lora_on_the_policy_only(tmp_path, make_model, tokenizer, dataset):
    from peft import LoraConfig

    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    trainer = PPOTrainer(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=2),
                         train_dataset=dataset, processing_class=tokenizer, algorithm=ppo(), kl=KL, peft_config=lora)
    assert any("lora" in n for n, _ in trainer.model.named_parameters())
    assert not any("lora" in n for n, _ in trainer.critic.named_parameters())
    trainer.train()
    logged = {k for entry in trainer.state.log_history for k in entry}
    assert "ppo/kl_penalty" in logged  # reference = the base model with adapters disabled


def test_ppo_settings_are_validated():
    with pytest.raises(UserError, match="value_model"):
        PPOSettings(value_model="twin")
    with pytest.raises(UserError, match="warmup_steps"):
        PPOSettings(warmup_steps=-1)
    with pytest.raises(UserError, match="GRPO has no critic"):
        AlgorithmConfig(name="grpo", ppo=PPOSettings(cliprange_value=0.5))


def test_a_kl_counted_twice_is_refused(tmp_path, make_model, tokenizer, dataset):
    # The KL in PPO's reward and TRL's beta in the loss as well: refused, with the value to use.
    with pytest.raises(UserError, match=r"the KL would be counted twice: kl.coef=0.05 in the reward and "
                                        r"GRPOConfig.beta=0.1 in the loss"):
        PPOTrainer(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path, beta=0.1),
                   train_dataset=dataset, processing_class=tokenizer, algorithm=ppo(), kl=KL)
    # placed in the loss, the coefficient must be TRL's beta (and nothing goes into the reward)
    with pytest.raises(UserError, match=r"GRPOConfig.beta=0.0 but kl.coef=0.05 \(loss\)"):
        PPOTrainer(model=make_model(), reward_funcs=[length_reward], args=grpo_args(tmp_path), train_dataset=dataset,
                   processing_class=tokenizer, algorithm=ppo(), kl=KLConfig(coef=0.05, placement="loss"))


def half_unscored_reward(completions, **kwargs):
    """Every other completion gets no reward (None), the rest their length."""
    return [None if i % 2 else len(c) / 10.0 for i, c in enumerate(completions)]


def test_rows_without_reward_are_out_of_the_whitening_and_the_critic(tmp_path, make_model, tokenizer, dataset):
    trainer = RecordingPPO(model=make_model(), reward_funcs=[half_unscored_reward], args=grpo_args(tmp_path, max_steps=1),
                           train_dataset=dataset, processing_class=tokenizer, algorithm=ppo())
    trainer.train()
    advantages, mask, returns, value_mask = trainer.seen[0]
    unscored = torch.arange(mask.size(0)) % 2 == 1
    assert torch.all(advantages[unscored] == 0) and torch.all(value_mask[unscored] == 0)
    assert torch.equal(value_mask[~unscored], mask[~unscored].float())  # the scored rows keep every token
    kept = advantages[~unscored][mask[~unscored] == 1]  # whitened over the scored rows' tokens only
    assert abs(kept.mean().item()) < 1e-5 and abs(kept.std().item() - 1) < 1e-3
    logged = next(entry for entry in trainer.state.log_history if "adv/nonfinite_rewards" in entry)
    assert logged["adv/nonfinite_rewards"] == 4  # counted: 4 of 8 rows


class ScaledPPO(PPOTrainer):
    """fp16's loss scaling on CPU: a real GradScaler in accelerate's place (accelerate keeps none on CPU),
    growing the scale 2x at every update() so that the updates per step can be counted."""

    def create_accelerator_and_postprocess(self):
        super().create_accelerator_and_postprocess()
        self.accelerator.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_factor=2.0, growth_interval=1)


def test_fp16_loss_scaling_unscales_the_critic_and_updates_the_scaler_once_per_step(tmp_path, make_model, tokenizer,
                                                                                   dataset):
    def run(cls, name):
        # the policy is not clipped (accelerate would not unscale it on CPU); the critic is, tightly
        args = grpo_args(tmp_path / name, max_steps=2, max_grad_norm=0.0)
        trainer = cls(model=make_model(), reward_funcs=[length_reward], args=args, train_dataset=dataset,
                      processing_class=tokenizer, algorithm=ppo(max_grad_norm=1e-3))
        trainer.train()
        norms = [entry["ppo/critic_grad_norm"] for entry in trainer.state.log_history if "ppo/critic_grad_norm" in entry]
        return trainer, norms

    scaled, scaled_norms = run(ScaledPPO, "scaled")
    plain, plain_norms = run(PPOTrainer, "plain")
    assert scaled.accelerator.scaler.get_scale() == 2.0**10 * 2**2  # one update() per optimiser step, 2 steps
    # the critic's clip saw the true gradients: the same norm as without scaling (scaling by 2^k is exact)
    assert scaled_norms[0] == pytest.approx(plain_norms[0], rel=1e-6) and plain_norms[0] > 1e-3
    torch.testing.assert_close(critic_vector(scaled), critic_vector(plain), rtol=1e-5, atol=1e-7)


def test_critic_optimizer_step_unscales_before_clipping_and_leaves_update_to_the_policy():
    from mlgrpo.trainers.critic import critic_optimizer_step

    def step(scaler):
        torch.manual_seed(0)
        layer = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(layer.parameters(), lr=1.0)
        loss = (layer(torch.ones(3, 4)) ** 2).sum()
        (scaler.scale(loss) if scaler else loss).backward()
        norm = critic_optimizer_step(optimizer, list(layer.parameters()), 0.5, scaler)
        return norm, torch.cat([p.detach().flatten() for p in layer.parameters()])

    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**12, growth_interval=1)
    scaled_norm, scaled_params = step(scaler)
    norm, params = step(None)
    assert scaled_norm == norm and norm > 0.5  # the true norm, clipped to 0.5
    torch.testing.assert_close(scaled_params, params)  # SGD: a clip at 0.5 * 4096 would have moved them 4096x
    assert scaler.get_scale() == 2.0**12 and int(scaler._growth_tracker) == 0  # no update() in the critic's step


def test_critic_warmup_holds_the_policy_and_trains_the_critic(tmp_path, make_model, tokenizer, dataset):
    class Snapshots(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            self.policy = getattr(self, "policy", []) + [torch.cat([p.detach().flatten().clone() for p in model.parameters()])]

    snapshots = Snapshots()
    model = make_model()
    start = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    trainer = PPOTrainer(model=model, reward_funcs=[length_reward], args=grpo_args(tmp_path, max_steps=3),
                         train_dataset=dataset, processing_class=tokenizer, algorithm=ppo(warmup_steps=2),
                         callbacks=[snapshots])
    critic_start = critic_vector(trainer)
    trainer.train()
    assert torch.equal(snapshots.policy[0], start) and torch.equal(snapshots.policy[1], start)
    assert (snapshots.policy[2] - start).abs().max() > 1e-5
    assert (critic_vector(trainer) - critic_start).abs().max() > 1e-5
    frozen = [entry["ppo/policy_frozen"] for entry in trainer.state.log_history if "ppo/policy_frozen" in entry]
    assert frozen == [1.0, 1.0, 0.0]


@pytest.mark.parametrize("minibatches, clips", [(1, False), (4, True)])
def test_policy_and_value_clipping_act_only_when_a_rollout_has_several_updates(tmp_path, make_model, tokenizer,
                                                                               dataset, minibatches, clips):
    args = grpo_args(tmp_path, max_steps=8, steps_per_generation=minibatches, learning_rate=1e-2)
    trainer = PPOTrainer(model=make_model(), reward_funcs=[length_reward], args=args, train_dataset=dataset,
                         processing_class=tokenizer, algorithm=ppo(value_learning_rate=1e-2))
    trainer.train()
    policy = [e["clip_ratio/region_mean"] for e in trainer.state.log_history if "clip_ratio/region_mean" in e]
    value = [e["ppo/value_clipfrac"] for e in trainer.state.log_history if "ppo/value_clipfrac" in e]
    assert len(policy) == len(value) == 8
    assert (max(policy) > 0 and max(value) > 0) if clips else (max(policy) == 0 and max(value) == 0)
