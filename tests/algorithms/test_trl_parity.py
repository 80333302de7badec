"""The default AdvantageConfig reproduces TRL's GRPO advantages, checked against TRL's own source.

TRL computes advantages inline in GRPOTrainer._generate_and_score_completions. Rather than re-typing
those lines (and drifting from them), this test cuts the advantage block and `trl.trainer.utils.nanstd`
out of the installed TRL files with `ast` and executes them as they are, without importing trl (which
would pull in transformers and cost seconds). If TRL changes the block, the test says so.
"""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from mlgrpo.algorithms import AdvantageConfig, GroupKeys, compute_advantages

NAN = float("nan")
G = 4


def trl_file(relative: str) -> tuple[str, ast.Module]:
    spec = importlib.util.find_spec("trl")  # finds the package without executing it
    source = (Path(spec.origin).parent / relative).read_text(encoding="utf-8")
    return source, ast.parse(source)


def trl_advantage_code() -> tuple[str, str]:
    """(nanstd's source, the advantage block's source) from the installed TRL."""
    utils_source, utils_tree = trl_file("trainer/utils.py")
    nanstd = next(n for n in utils_tree.body if isinstance(n, ast.FunctionDef) and n.name == "nanstd")
    source, tree = trl_file("trainer/grpo_trainer.py")
    method = next(
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_generate_and_score_completions"
    )
    body = method.body
    for i, node in enumerate(body):
        if isinstance(node, ast.If) and "multi_objective_aggregation" in ast.get_source_segment(source, node.test):
            # the if/elif/else over the aggregation modes, then `advantages = torch.nan_to_num(...)`
            block = [node, body[i + 1]]
            assert "nan_to_num" in ast.get_source_segment(source, body[i + 1]), "TRL's advantage block changed"
            lines = source.splitlines()[block[0].lineno - 1 : block[1].end_lineno]
            return ast.get_source_segment(utils_source, nanstd), textwrap.dedent("\n".join(lines))
    raise AssertionError("TRL's advantage block was not found in _generate_and_score_completions")


NANSTD_SOURCE, BLOCK_SOURCE = trl_advantage_code()


def trl_advantages(rewards: torch.Tensor, scale_rewards: str) -> tuple[torch.Tensor, torch.Tensor]:
    """TRL's (advantages, is_std_zero) for one reward function, computed by TRL's own lines."""
    namespace = {"torch": torch}
    exec(NANSTD_SOURCE, namespace)
    rewards_per_func = rewards[:, None]
    namespace.update(
        self=SimpleNamespace(
            multi_objective_aggregation="sum_then_normalize",  # TRL's default
            scale_rewards=scale_rewards,
            reward_weights=torch.ones(1),
            reward_funcs=[None],
        ),
        rewards_per_func=rewards_per_func,
        unscorable_mask=torch.isnan(rewards_per_func).all(dim=1),
        num_generations=G,
        device=rewards.device,
    )
    exec(BLOCK_SOURCE, namespace)
    return namespace["advantages"], namespace["is_std_zero"]


def batch(seed: int) -> torch.Tensor:
    """16 prompts x G completions: binary, graded and constant groups, and unscorable (NaN) rows."""
    gen = torch.Generator().manual_seed(seed)
    rewards = torch.rand(16 * G, generator=gen)
    rewards[: 4 * G] = torch.randint(0, 2, (4 * G,), generator=gen).float()  # pass/fail rewards
    rewards[4 * G : 5 * G] = 0.3  # a zero-std group
    rewards[torch.rand(16 * G, generator=gen) < 0.1] = NAN
    return rewards


@pytest.mark.parametrize("scale_rewards", ["group", "batch", "none"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_default_config_reproduces_trl(scale_rewards, seed, dtype):
    rewards = batch(seed).to(dtype)
    expected, is_std_zero = trl_advantages(rewards.clone(), scale_rewards)
    keys = GroupKeys.from_rows([f"p{i // G}" for i in range(len(rewards))], ["en"] * len(rewards), group_size=G)
    cfg = AdvantageConfig() if scale_rewards == "group" else AdvantageConfig(std_scope=scale_rewards)
    result = compute_advantages(rewards, keys, cfg)
    # The same formula summed in another order (scatter sums vs row reductions): equal up to rounding,
    # not bit for bit. In float64 too the gap is ~1e-8 relative: TRL's nanstd computes its Bessel factor
    # count / (count - 1) from int64 counts, which torch divides in float32 (4/3 rounded to 7 digits).
    tol = 1e-6 if dtype == torch.float32 else 5e-8
    torch.testing.assert_close(result.advantages, expected, rtol=tol, atol=tol)
    if scale_rewards == "group":
        # TRL's frac_reward_zero_std, for the groups of its layout
        assert result.metrics["adv/frac_zero_std"].item() == pytest.approx(is_std_zero.float().mean().item())


def test_default_config_is_trl_scale_rewards_group():
    cfg = AdvantageConfig()
    assert (cfg.estimator, cfg.group_by, cfg.scale_scope, cfg.ddof, cfg.eps) == ("grpo", "prompt", "group", 1, 1e-4)
