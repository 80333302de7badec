"""Two processes (gloo on CPU, started by torchrun): advantages and language statistics are computed over
the gathered batch, so they equal what one process computes from the same batch; and a run on two ranks
ends with the parameters of the same run (seed, global batch) in one process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from mlgrpo.algorithms import AdvantageConfig, GroupKeys, compute_advantages
from mlgrpo.trainers.metrics import per_language
from mlgrpo.trainers.ppo import CRITIC_WEIGHTS

from .conftest import build_tokenizer, make_policy

pytestmark = pytest.mark.slow  # every test here starts torchrun ranks (15-40 s a fixture)

WORKER = Path(__file__).with_name("dist_worker.py")
EQUIVALENCE = Path(__file__).with_name("dist_equivalence.py")
FSDP = Path(__file__).with_name("dist_fsdp.py")


def torchrun(script: Path, out: Path, processes: int) -> None:
    command = [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc_per_node", str(processes),
               str(script), str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("dist")
    torchrun(WORKER, out, 2)
    return [json.loads((out / f"rank{k}.json").read_text()) for k in range(2)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("equivalence")
    torchrun(EQUIVALENCE, out, 2)
    torchrun(EQUIVALENCE, out, 1)
    return out


@pytest.fixture(scope="module")
def sharded(trained) -> Path:
    torchrun(FSDP, trained, 2)
    return trained


@pytest.mark.parametrize("algorithm", ["grpo", "ppo", "ppo_lora"])
def test_two_ranks_end_with_the_parameters_of_one_process(trained, algorithm):
    # 3 steps of 32 completions (8 prompts x 4) with greedy decoding: 16 per rank, or 32 in one process.
    # Adam moves every parameter by ~lr per step (1e-4), so a rank that trained on other advantages, another
    # critic target or another data order would end ~1e-4 away; the two layouts differ by summation order.
    # One minibatch per rollout: with several, TRL shuffles each rank's share of the rollout on its own, so
    # the minibatches are another (equally valid) partition of the rollout than one process draws.
    one, two = (torch.load(trained / f"{algorithm}_world{w}.pt", weights_only=True) for w in (1, 2))
    assert one.keys() == two.keys() and (algorithm == "grpo" or any(k.startswith("critic.") for k in one))
    assert_trained(one)
    for key in one:
        torch.testing.assert_close(two[key], one[key], rtol=0, atol=2e-6, msg=key)


def assert_trained(state: dict) -> None:
    """The policy (or its LoRA adapter) and the critic each moved by more than half of Adam's first step
    (~lr, 1e-4): a rank that trained on other advantages, targets or data would end that far away too."""
    start = {f"policy.{k}": v for k, v in make_policy(build_tokenizer()).state_dict().items()}

    def moved(prefix: str, zero_at_start: tuple[str, ...]) -> float:
        return max((state[k] - start.get(k, 0)).abs().max().item() for k in state
                   if k.startswith(prefix) and (k in start or any(name in k for name in zero_at_start)))

    assert moved("policy.", ("lora_B.default",)) > 5e-5
    if any(k.startswith("critic.") for k in state):
        assert moved("critic.", ("head.", "lora_B.critic")) > 5e-5


def test_ppo_sharded_with_fsdp2_ends_with_the_parameters_of_one_process_and_resumes(sharded):
    # The PPO arm above, on 2 ranks with FSDP2: the policy and the critic each sharded (every parameter a
    # DTensor, each rank holding about half of each model), and the same parameters as the one-process run
    # (measured: 2.7e-7 apart, the critic 3.7e-9, while the parameters moved 2e-4).
    views = [json.loads((sharded / f"fsdp_rank{k}.json").read_text()) for k in range(2)]
    for view in views:
        assert view["engine"] == "FSDP"
        for model in ("policy", "critic"):
            assert view[model]["dtensors"] == view[model]["parameters"] > 0
            # half of each tensor's first dimension: an odd one (the value head's 1 row) leaves rank 0 a row more
            assert view[model]["local_elements"] <= view[model]["elements"] // 2 + 64
    one, two = (torch.load(sharded / name, weights_only=True) for name in ("ppo_world1.pt", "ppo_fsdp_world2.pt"))
    assert one.keys() == two.keys()
    assert_trained(one)
    for key in one:
        torch.testing.assert_close(two[key], one[key], rtol=0, atol=2e-6, msg=key)
    # Resumed from the checkpoint before the last step (the critic gathered whole from its shards, its AdamW
    # state and schedule, then sharded again), only the last step trained again, and the same parameters.
    for rank in range(2):
        steps = json.loads((sharded / f"fsdp_steps_rank{rank}.json").read_text())
        # From the last step's checkpoint: no step 4 (HF's loop would train one), the last step again.
        assert steps == {"first": [1, 2, 3], "resumed": [3], "finished": [3]}
    resumed, finished = (torch.load(sharded / f"ppo_fsdp_{name}_world2.pt", weights_only=True)
                         for name in ("resumed", "finished"))
    saved = load_file(str(sharded / "ppo-fsdp-2" / "checkpoint-2" / CRITIC_WEIGHTS))
    assert saved.keys() == {k.removeprefix("critic.") for k in two if k.startswith("critic.")}
    for key in two:
        torch.testing.assert_close(resumed[key], two[key], rtol=0, atol=0, msg=key)
        torch.testing.assert_close(finished[key], two[key], rtol=0, atol=0, msg=key)


def test_two_ranks_refill_the_rollout_one_process_would(trained):
    # Dynamic sampling decides on the gathered batch and moves rows between ranks: the same groups dropped,
    # the same fresh prompts, the same rollout (prompts, completions, advantages, token count) trained on.
    one, two = (json.loads((trained / f"grpo_dynamic_world{w}.json").read_text()) for w in (1, 2))
    assert len(one["rounds"]) == 3 and sum(one["rounds"]) > 0 and one["rounds"] == two["rounds"]
    for first, second in zip(one["rollouts"], two["rollouts"], strict=True):
        assert first["prompts"] == second["prompts"] and first["num_items"] == second["num_items"]
        assert first["completion_ids"] == second["completion_ids"]
        torch.testing.assert_close(torch.tensor(second["advantages"]), torch.tensor(first["advantages"]), rtol=0, atol=1e-6)


def test_two_ranks_see_one_gathered_batch(ranks):
    assert [r["world"] for r in ranks] == [2, 2]
    for first, second in zip(ranks[0]["records"], ranks[1]["records"]):
        assert first["rewards"] == second["rewards"] and first["lang_ids"] == second["lang_ids"]
        assert len(first["rewards"]) == 2 * len(first["local_advantages"])


def test_advantages_equal_the_single_process_result(ranks):
    cfg = AdvantageConfig(group_by="language", std_scope="language")
    for step, (first, second) in enumerate(zip(ranks[0]["records"], ranks[1]["records"])):
        keys = GroupKeys(prompt_ids=torch.tensor(first["prompt_ids"]), lang_ids=torch.tensor(first["lang_ids"]),
                         languages=tuple(first["languages"]))
        single = compute_advantages(torch.tensor(first["rewards"]), keys, cfg, step=step, total_steps=2)
        both = torch.tensor(first["local_advantages"] + second["local_advantages"])
        torch.testing.assert_close(both, single.advantages, rtol=0, atol=1e-6)
        # and the language statistics each rank logged are those of the whole batch
        expected = per_language(torch.tensor(first["rewards"]), keys.lang_ids, keys.languages, "reward")
        for rank in (first, second):
            for name, value in rank["language_metrics"].items():
                assert value == pytest.approx(float(expected[name]), abs=1e-6)
