"""One rank of the sharded-PPO test (run by torchrun from test_distributed.py; not collected by pytest).

Trains the PPO arm of dist_equivalence.py (same seed, global batch, steps and greedy decoding) with FSDP2
(training.fsdp: full_shard, fsdp_config.version 2): the policy and the critic both sharded over the ranks.
Writes from rank 0 the full parameters to OUT/ppo_fsdp_world<W>.pt, and those of the same run resumed from
its checkpoint before the last step to OUT/ppo_fsdp_resumed_world<W>.pt (and from its last step's checkpoint
to OUT/ppo_fsdp_finished_world<W>.pt), and each rank's view of the sharding
(which parameters are DTensors, and how many elements this rank holds of each model) to OUT/fsdp_rank<k>.json.

accelerate (1.15) turns FSDP on only for GPU process groups (AcceleratorState.__init__ in accelerate/state.py);
on gloo it would quietly prepare the models with DDP, which mlgrpo's PPO refuses (sharding.check_engine).
`fsdp_on_gloo` marks this gloo group as a multi-device one before the trainer builds its Accelerator, so
that accelerate's own FSDP2 path runs: fully_shard on a CPU device mesh, gloo's all-gather and
reduce-scatter. Nothing else is replaced; the test checks that both models really are sharded.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.trainers.conftest import (  # noqa: E402
    StepsTrained, build_dataset, build_tokenizer, grpo_args, make_policy)
from tests.trainers.dist_equivalence import GLOBAL_BATCH, STEPS, prompt_and_length_reward  # noqa: E402
from mlgrpo.sampling import SamplerConfig  # noqa: E402
from mlgrpo.trainers import AlgorithmConfig, KLConfig, PPOTrainer  # noqa: E402

FSDP = {"fsdp": "full_shard", "fsdp_config": {"version": 2}}


def fsdp_on_gloo(args) -> None:
    """After TrainingArguments set up the gloo process group, before the Trainer's Accelerator reads it."""
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType

    assert args.device.type == "cpu"  # sets up the process group (transformers' _setup_devices)
    PartialState().distributed_type = DistributedType.MULTI_GPU


def full_parameters(model) -> dict:
    """{name: full CPU tensor}, each DTensor gathered from its shards (a collective: every rank calls it)."""
    from torch.distributed.tensor import DTensor

    return {name: (t.full_tensor() if isinstance(t, DTensor) else t).detach().to("cpu", copy=True)
            for name, t in model.state_dict().items()}


def sharding(model, world: int) -> dict:
    from torch.distributed.tensor import DTensor

    params = list(model.parameters())
    local = sum(p.to_local().numel() if isinstance(p, DTensor) else p.numel() for p in params)
    return {"dtensors": sum(isinstance(p, DTensor) for p in params), "parameters": len(params),
            "local_elements": local, "elements": sum(p.numel() for p in params), "world": world}


def train(out: Path, world: int, tokenizer, resume: str | None = None) -> PPOTrainer:
    args = grpo_args(out / f"ppo-fsdp-{world}", max_steps=STEPS, per_device_train_batch_size=GLOBAL_BATCH // world,
                     learning_rate=1e-4, generation_kwargs={"do_sample": False}, beta=0.0,
                     save_strategy="steps", save_steps=STEPS - 1, **FSDP)  # a checkpoint before the last step
    fsdp_on_gloo(args)
    trainer = PPOTrainer(model=make_policy(tokenizer), reward_funcs=[prompt_and_length_reward], args=args,
                         train_dataset=build_dataset(), processing_class=tokenizer,
                         algorithm=AlgorithmConfig.ppo_default(), kl=KLConfig(), sampler=SamplerConfig(name="balanced", seed=0),
                         callbacks=[StepsTrained()])
    trainer.train(resume_from_checkpoint=resume)
    return trainer


def trainer_steps(trainer) -> list[int]:
    return next(c for c in trainer.callback_handler.callbacks if isinstance(c, StepsTrained)).steps


def save_parameters(trainer: PPOTrainer, path: Path) -> None:
    state = {f"policy.{k}": v for k, v in full_parameters(trainer.model).items()}
    state.update({f"critic.{k}": v for k, v in full_parameters(trainer.critic).items()})
    if trainer.accelerator.is_main_process:
        torch.save(state, path)
    trainer.accelerator.wait_for_everyone()


def main(out: Path) -> None:
    torch.set_num_threads(1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    tokenizer = build_tokenizer()
    trainer = train(out, world, tokenizer)
    rank = int(os.environ.get("RANK", "0"))
    views = {"policy": sharding(trainer.model, world), "critic": sharding(trainer.critic, world),
             "engine": trainer.accelerator.distributed_type.value}
    (out / f"fsdp_rank{rank}.json").write_text(json.dumps(views))
    save_parameters(trainer, out / f"ppo_fsdp_world{world}.pt")
    # Resumed from the checkpoint of step STEPS - 1: the critic, its optimiser and schedule read back into
    # their shards, and the last step trained again.
    checkpoint = out / f"ppo-fsdp-{world}" / f"checkpoint-{STEPS - 1}"
    resumed = train(out, world, tokenizer, resume=str(checkpoint))
    save_parameters(resumed, out / f"ppo_fsdp_resumed_world{world}.pt")
    # Resumed from the last step's checkpoint (a worker that died in its final evaluation): HF's loop would
    # train a step STEPS + 1; sharded, the adapter resumes from the checkpoint before, and step STEPS is trained again.
    finished = train(out, world, tokenizer, resume=str(out / f"ppo-fsdp-{world}" / f"checkpoint-{STEPS}"))
    save_parameters(finished, out / f"ppo_fsdp_finished_world{world}.pt")
    steps = {"first": trainer_steps(trainer), "resumed": trainer_steps(resumed), "finished": trainer_steps(finished)}
    (out / f"fsdp_steps_rank{rank}.json").write_text(json.dumps(steps))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
