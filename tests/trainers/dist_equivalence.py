"""One rank of the distributed equivalence test (run by torchrun from test_distributed.py; not collected).

Trains GRPO (language-grouped), PPO and PPO with a LoRA policy and critic for a few steps with greedy decoding on a global batch of
GLOBAL_BATCH completions, split over however many ranks torchrun started, and writes the final parameters
(policy, and the critic for PPO) to OUT/<algorithm>_world<W>.pt from rank 0; and the rollouts a dynamic-sampling
arm trained on to OUT/grpo_dynamic_world<W>.json. Greedy decoding makes the
rollouts a function of the parameters alone, so one process and two must end with the same parameters.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.trainers.conftest import build_dataset, build_tokenizer, grpo_args, make_policy  # noqa: E402
from mlgrpo.algorithms import AdvantageConfig  # noqa: E402
from mlgrpo.sampling import SamplerConfig  # noqa: E402
from mlgrpo.trainers import (  # noqa: E402
    AlgorithmConfig, DynamicSampling, KLConfig, MultilingualGRPOTrainer, PPOSettings, PPOTrainer,
)

GLOBAL_BATCH = 32  # completions per optimiser step, over all ranks: 8 prompts x 4, 2 per language
STEPS = 3


def prompt_and_length_reward(completions, prompts, **kwargs):
    """Varies between the prompts of a language even when a random policy's greedy completions do not."""
    return [len(p) % 5 + len(c) / 10.0 for p, c in zip(prompts, completions)]


def language_reward(completions, language, **kwargs):
    """Constant groups for ru, ja and sw prompts; 0, 1, 2, 3 within every other group. Row i of a rank is
    completion i % 4 of its group in either layout (a rank's share, 16 rows, starts a group)."""
    return [1.0 if lang in ("ru", "ja", "sw") else float(i % 4) for i, lang in enumerate(language)]


ALGORITHMS = {
    # language-grouped: greedy completions of one prompt are identical, so prompt groups have no spread
    "grpo": (MultilingualGRPOTrainer, AlgorithmConfig(advantage=AdvantageConfig(group_by="language",
                                                                                std_scope="language")),
             prompt_and_length_reward),
    "ppo": (PPOTrainer, AlgorithmConfig.ppo_default(), prompt_and_length_reward),
    # a LoRA policy with the LoRA critic (its own adapter on the policy's frozen base), DDP-averaged
    "ppo_lora": (PPOTrainer, dataclasses.replace(AlgorithmConfig.ppo_default(), ppo=PPOSettings(value_model="lora")),
                 prompt_and_length_reward),
}


def lora():
    from peft import LoraConfig

    return LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")


class RecordingRollouts(MultilingualGRPOTrainer):
    """Keeps each rollout trained on: its gathered prompts, advantages and this rank's completion ids."""

    def _language_metrics(self, rows, scalar, keys):
        self.rollouts = getattr(self, "rollouts", []) + [{"prompts": list(rows.prompts)}]
        return super()._language_metrics(rows, scalar, keys)

    def rollout(self, inputs):
        output = super().rollout(inputs)
        gathered = self.accelerator.gather(self.accelerator.pad_across_processes(output.completion_ids, dim=1))
        self.rollouts[-1].update(advantages=self.accelerator.gather(output.advantages).tolist(),
                                 completion_ids=gathered.tolist(), num_items=int(output.batch_tokens))
        return output


def dynamic_rollouts(out: Path, world: int, tokenizer) -> None:
    """Dynamic sampling on a prompt-grouped GRPO arm: greedy completions of a prompt are identical, so its
    gradient is rounding noise and parameters cannot be compared; the rollouts trained on can. Writes them
    (and the refill rounds) to OUT/grpo_dynamic_world<W>.json from rank 0."""
    args = grpo_args(out / f"dynamic-{world}", max_steps=STEPS, per_device_train_batch_size=GLOBAL_BATCH // world,
                     learning_rate=1e-4, generation_kwargs={"do_sample": False}, beta=0.0)
    trainer = RecordingRollouts(model=make_policy(tokenizer), reward_funcs=[language_reward], args=args,
                                train_dataset=build_dataset(), processing_class=tokenizer, kl=KLConfig(),
                                algorithm=AlgorithmConfig(dynamic_sampling=DynamicSampling(enabled=True, max_rounds=2)),
                                sampler=SamplerConfig(name="balanced", seed=0))
    trainer.train()
    rounds = [entry["dynamic/rounds"] for entry in trainer.state.log_history if "dynamic/rounds" in entry]
    if trainer.accelerator.is_main_process:
        (out / f"grpo_dynamic_world{world}.json").write_text(json.dumps({"rounds": rounds, "rollouts": trainer.rollouts}))
    trainer.accelerator.wait_for_everyone()


def main(out: Path) -> None:
    torch.set_num_threads(1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    tokenizer = build_tokenizer()
    for name, (cls, algorithm, reward) in ALGORITHMS.items():
        args = grpo_args(out / f"{name}-{world}", max_steps=STEPS, per_device_train_batch_size=GLOBAL_BATCH // world,
                         learning_rate=1e-4, generation_kwargs={"do_sample": False}, beta=0.0)
        trainer = cls(model=make_policy(tokenizer), reward_funcs=[reward], args=args,
                      train_dataset=build_dataset(), processing_class=tokenizer, algorithm=algorithm, kl=KLConfig(),
                      sampler=SamplerConfig(name="balanced", seed=0), **({"peft_config": lora()} if "lora" in name else {}))
        trainer.train()
        if trainer.accelerator.is_main_process:
            state = {f"policy.{k}": v for k, v in trainer.accelerator.unwrap_model(trainer.model).state_dict().items()}
            if name.startswith("ppo"):
                critic = trainer.accelerator.unwrap_model(trainer.critic)
                state.update({f"critic.{k}": v for k, v in critic.state_dict().items()})
            torch.save({k: v.detach().cpu().clone() for k, v in state.items()}, out / f"{name}_world{world}.pt")
        trainer.accelerator.wait_for_everyone()
    dynamic_rollouts(out, world, tokenizer)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
