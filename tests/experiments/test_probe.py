"""`mlgrpo validate --probe` (issue 26): the starting model's own rollouts, scored, say whether a run can learn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mlgrpo import cli
from mlgrpo.experiments.probe import group_stats

TRIMMED = Path(__file__).with_name("trimmed.yaml")


def unreachable_file_experiment(tmp_path: Path) -> Path:
    """The trimmed quickstart's tiny model on a user file whose references it can never write."""
    rows = [{"prompt": f"<{code}> number: {n} ->", "language": code, "reference": f"§{n}§ unreachable"}
            for code in ("en", "ja") for n in range(30)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                         encoding="utf-8")
    config = yaml.safe_load(TRIMMED.read_text(encoding="utf-8"))
    config["data"] = {"file": "rows.jsonl", "languages": ["en", "ja"]}
    config["rewards"] = {"rewards": [{"name": "exact_match"}]}
    config["arms"] = {"grpo": {}}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_probe_says_the_reward_never_fires_and_the_groups_are_flat(tmp_path, capsys):
    path = unreachable_file_experiment(tmp_path)
    assert cli.main(["validate", str(path), "--probe", "--json", "--probe-prompts", "3"]) == 0
    plan = json.loads(capsys.readouterr().out)
    (probe,) = plan["probe"]
    assert probe["arms"] == ["grpo"] and probe["settings"]["num_generations"] == 4
    rows = {(r["language"], r["reward"]): r for r in probe["rows"]}
    for code in ("en", "ja"):
        row = rows[code, "exact_match"]
        assert (row["fires"], row["zero_spread"], row["groups"], row["completions"]) == (0.0, 1.0, 3, 12)
    assert any(w.startswith("reward 'exact_match' never fired in 24 sampled completions (any language)")
               for w in probe["warnings"])
    assert any(w.startswith("most groups are flat: 100% of 6 groups have zero spread") for w in probe["warnings"])
    assert probe["timing"]["step_s"] > 0 and probe["timing"]["run_s"] > 0
    # the placement's wall time in seconds: 1 run length (one GRPO run) x the probe's run time
    (wall,) = [line for line in plan["placement"] if "estimated wall time on this machine" in line]
    assert f"1 run length(s) x {probe['timing']['run_s']:.0f} s" in wall
    assert cli.main(["validate", str(path), "--probe", "--probe-prompts", "1"]) == 0
    out = capsys.readouterr().out
    assert "probe of grpo: 1 train prompts per language x G=4 at temperature 1.0" in out
    assert "  - most groups are flat" in out and out.rstrip().endswith("OK")


def test_group_stats_on_a_reward_that_sometimes_fires():
    stats = group_stats([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]], [0.0, 0.0, 1.0])
    assert stats["zero_spread"] == pytest.approx(2 / 3) and stats["fires"] == pytest.approx(5 / 12)
    assert stats["spread"] == pytest.approx(0.5 / 3)  # std (ddof 1) of [1, 0, 0, 0] is 0.5
    assert stats["greedy"] == pytest.approx(1 / 3)
