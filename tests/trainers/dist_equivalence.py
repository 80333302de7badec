"""One rank of the distributed equivalence test (run by torchrun from test_distributed.py; not collected).

Trains GRPO (language-grouped) and PPO for a few steps with greedy decoding on a global batch of
GLOBAL_BATCH completions, split over however many ranks torchrun started, and writes the final parameters
(policy, and the critic for PPO) to OUT/<algorithm>_world<W>.pt from rank 0. Greedy decoding makes the
rollouts a function of the parameters alone, so one process and two must end with the same parameters.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.trainers.conftest import build_dataset, build_tokenizer, grpo_args, make_policy  # noqa: E402
from mlgrpo.algorithms import AdvantageConfig  # noqa: E402
from mlgrpo.sampling import SamplerConfig  # noqa: E402
from mlgrpo.trainers import AlgorithmConfig, KLConfig, MultilingualGRPOTrainer, PPOTrainer  # noqa: E402

GLOBAL_BATCH = 32  # completions per optimiser step, over all ranks: 8 prompts x 4, 2 per language
STEPS = 3
ALGORITHMS = {
    # language-grouped: greedy completions of one prompt are identical, so prompt groups have no spread
    "grpo": (MultilingualGRPOTrainer, AlgorithmConfig(advantage=AdvantageConfig(group_by="language",
                                                                                std_scope="language"))),
    "ppo": (PPOTrainer, AlgorithmConfig.ppo_default()),
}


def prompt_and_length_reward(completions, prompts, **kwargs):
    """Varies between the prompts of a language even when a random policy's greedy completions do not."""
    return [len(p) % 5 + len(c) / 10.0 for p, c in zip(prompts, completions)]


def main(out: Path) -> None:
    torch.set_num_threads(1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    tokenizer = build_tokenizer()
    for name, (cls, algorithm) in ALGORITHMS.items():
        args = grpo_args(out / f"{name}-{world}", max_steps=STEPS, per_device_train_batch_size=GLOBAL_BATCH // world,
                         learning_rate=1e-4, generation_kwargs={"do_sample": False}, beta=0.0)
        trainer = cls(model=make_policy(tokenizer), reward_funcs=[prompt_and_length_reward], args=args,
                      train_dataset=build_dataset(), processing_class=tokenizer, algorithm=algorithm, kl=KLConfig(),
                      sampler=SamplerConfig(name="balanced", seed=0))
        trainer.train()
        if trainer.accelerator.is_main_process:
            state = {f"policy.{k}": v for k, v in trainer.accelerator.unwrap_model(trainer.model).state_dict().items()}
            if name == "ppo":
                critic = trainer.accelerator.unwrap_model(trainer.critic)
                state.update({f"critic.{k}": v for k, v in critic.state_dict().items()})
            torch.save({k: v.detach().cpu().clone() for k, v in state.items()}, out / f"{name}_world{world}.pt")
        trainer.accelerator.wait_for_everyone()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
