"""Two processes (gloo on CPU, started by torchrun): advantages and language statistics are computed over
the gathered batch, so they equal what one process computes from the same batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mlgrpo.algorithms import AdvantageConfig, GroupKeys, compute_advantages
from mlgrpo.trainers.metrics import per_language

WORKER = Path(__file__).with_name("dist_worker.py")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("dist")
    torchrun = Path(sys.executable).with_name("torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", str(WORKER), str(out)],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads((out / f"rank{k}.json").read_text()) for k in range(2)]


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
