"""One rank of the two-process test (run by torchrun from test_distributed.py; not collected by pytest).

Trains two steps with language-scoped GRPO and writes, per generation batch, what this rank saw of the
gathered batch and the advantages it kept, to OUT/rank<k>.json.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.trainers.conftest import build_dataset, build_tokenizer, grpo_args, length_reward, make_policy  # noqa: E402
from mlgrpo.algorithms import AdvantageConfig  # noqa: E402
from mlgrpo.trainers import AlgorithmConfig, MultilingualGRPOTrainer  # noqa: E402


class Recorder(MultilingualGRPOTrainer):
    def _advantages(self, rewards, keys, output, local):
        result = super()._advantages(rewards, keys, output, local)
        self.records.append({
            "rewards": rewards.tolist(), "languages": list(keys.languages), "lang_ids": keys.lang_ids.tolist(),
            "prompt_ids": keys.prompt_ids.tolist(), "local_advantages": result.local.tolist(),
            "metrics": {k: float(v) for k, v in result.metrics.items()},
        })
        return result

    def _language_metrics(self, rows, rewards, keys):
        metrics = super()._language_metrics(rows, rewards, keys)
        self.records[-1]["language_metrics"] = {k: float(v) for k, v in metrics.items() if k.startswith("reward/")}
        return metrics


def main(out: Path) -> None:
    torch.set_num_threads(1)
    tokenizer = build_tokenizer()
    algorithm = AlgorithmConfig(advantage=AdvantageConfig(group_by="language", std_scope="language"))
    trainer = Recorder(model=make_policy(tokenizer), reward_funcs=[length_reward], args=grpo_args(out / "run", max_steps=2),
                       train_dataset=build_dataset(), processing_class=tokenizer, algorithm=algorithm)
    trainer.records = []
    trainer.train()
    rank = int(os.environ.get("RANK", "0"))
    (out / f"rank{rank}.json").write_text(json.dumps({"world": trainer.accelerator.num_processes, "records": trainer.records}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
