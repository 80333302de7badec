"""build_reward_functions, weighting (as TRL sums), and the pre-flight column check."""

from __future__ import annotations

import math
import pickle

import pytest
import torch

from mlgrpo.errors import UserError
from mlgrpo.rewards import (
    LanguageAffine,
    RewardConfig,
    RewardGuard,
    RewardSpec,
    build_reward_functions,
    check_requirements,
    missing_columns,
    weighted_total,
)

ROWS = {  # what TRL passes: every column a list aligned with the completions
    "prompts": ["<de> 21 ->", "<de> 21 ->", "<zh> 21 ->", "<zh> 21 ->"],
    "completions": ["einundzwanzig", "<answer>einundzwanzig</answer>", "二十一", "<answer>二十</answer>"],
    "answers": [["einundzwanzig"], ["einundzwanzig"], ["二十一"], ["二十一"]],
    "reference": ["einundzwanzig", "einundzwanzig", "二十一", "二十一"],
    "language": ["de", "de", "zh", "zh"],
    "trainer_state": None, "log_extra": None, "log_metric": None, "completion_ids": [[1], [2], [3], [4]],
}


def test_functions_are_named_weighted_and_parameterised():
    config = RewardConfig((
        RewardSpec("exact_match"),
        RewardSpec("format", label="answer_tag", weight=0.5, params={"pattern": r"<answer>.*</answer>"}),
        RewardSpec("length", weight=-1.0),
    ))
    funcs, weights = build_reward_functions(config)
    assert [f.__name__ for f in funcs] == ["exact_match", "answer_tag", "length"]
    assert weights == [1.0, 0.5, -1.0]
    per_func = [f(**ROWS) for f in funcs]
    # exact_match: only the bare completions equal the answer.
    # format: the tagged ones match.
    # length vs reference (13 and 3 code points): 30/13 = 2.31 -> -(0.31/2) = -0.1538; 3/3 -> 0;
    # "<answer>二十</answer>" = 17 code points, 17/3 = 5.67 -> -1.
    assert per_func[0] == [1.0, 0.0, 1.0, 0.0]
    assert per_func[1] == [0.0, 1.0, 0.0, 1.0]
    assert per_func[2] == pytest.approx([0.0, -(30 / 13 - 2) / 2, 0.0, -1.0])
    totals = weighted_total(per_func, weights)
    # 1 + 0 - 0 = 1; 0 + 0.5 + 0.1538 = 0.6538; 1 + 0 - 0 = 1; 0 + 0.5 + 1 = 1.5
    assert totals == pytest.approx([1.0, 0.5 + (30 / 13 - 2) / 2, 1.0, 1.5])


def test_weighted_total_matches_trls_arithmetic():
    # TRL (grpo_trainer.py): None -> NaN, rewards = (per_func * weights).nansum(dim=1), rows where every
    # function is NaN are unscorable (NaN). The same numbers through that code path:
    per_func = [[1.0, None, None, 0.25], [-0.2, 0.7, None, None]]
    weights = [1.0, 0.5]
    tensor = torch.tensor([[math.nan if v is None else v for v in col] for col in per_func]).T
    trl = (tensor * torch.tensor(weights).unsqueeze(0)).nansum(dim=1)
    trl[torch.isnan(tensor).all(dim=1)] = math.nan
    ours = weighted_total(per_func, weights)
    assert [math.nan if v is None else v for v in ours] == pytest.approx(trl.tolist(), nan_ok=True)


def test_a_column_named_like_a_parameter_is_an_error_not_an_override():
    funcs, _ = build_reward_functions([RewardSpec("format", params={"pattern": "x"})], RewardGuard("fail"))
    with pytest.raises(UserError, match=r"column\(s\) \['pattern'\] share a name with parameter"):
        funcs[0](prompts=[""], completions=["x"], pattern=["y"])


def test_guard_is_shared_and_reachable():
    guard = RewardGuard("zero")
    funcs, _ = build_reward_functions([RewardSpec("exact_match"), RewardSpec("chrf")], guard)
    assert all(f.guard is guard for f in funcs)
    for f in funcs:
        f(**ROWS)
    assert guard.counts() == {"exact_match": {"values": 4}, "chrf": {"values": 4}}


def test_built_functions_survive_pickling():
    # TRL names and calls "picklable reward forms"; multi-process launchers may pickle them.
    config = RewardConfig.from_dict({"rewards": [{"name": "exact_match", "per_language": {"sw": {"scale": 0.2}}}]})
    funcs, _ = build_reward_functions(config)
    copy = pickle.loads(pickle.dumps(funcs))[0]
    assert copy.__name__ == "exact_match"
    assert copy(prompts=[""], completions=["moja"], answers=[["moja"]], language=["sw"]) == [0.2]


def test_duplicate_names_are_rejected_for_bare_lists_too():
    with pytest.raises(UserError, match="two rewards are named 'chrf'"):
        build_reward_functions([RewardSpec("chrf"), RewardSpec("chrf", weight=2)])


RECORDS = [
    {"id": "ui/sw/0", "prompt": "p", "reference": None, "answers": [], "language": "sw"},
    {"id": "ui/sw/1", "prompt": "p", "reference": "Hifadhi", "answers": ["Hifadhi"], "language": "sw"},
    {"id": "ui/sw/2", "prompt": "p", "reference": None, "answers": ["Hifadhi"], "language": "sw"},
]


def test_missing_columns_are_found_before_training():
    specs = [RewardSpec("exact_match"), RewardSpec("chrf"), RewardSpec("format", params={"pattern": "."})]
    gaps = missing_columns(specs, RECORDS)
    # exact_match accepts answers or reference: only row 0 has neither; chrf needs the reference: rows 0 and 2.
    assert [(g.reward, g.requirement, g.rows_missing, g.first_row) for g in gaps] == [
        ("exact_match", "answers|reference", 1, "'ui/sw/0'"), ("chrf", "reference", 2, "'ui/sw/0'")]
    with pytest.raises(UserError, match=r"suite ui: reward 'exact_match' needs 'answers' or 'reference', missing in "
                                        r"1 of 3 rows \(first: 'ui/sw/0'\)"):
        check_requirements(specs, RECORDS, source="suite ui")
    assert len(check_requirements(specs, RECORDS, allow_partial=True)) == 2


def test_a_column_missing_everywhere_fails_even_when_partial_is_allowed():
    records = [{"id": str(i), "prompt": "p", "reference": "x"} for i in range(3)]
    spec = RewardSpec("chrf", per_language={"sw": LanguageAffine(scale=0.2)})
    with pytest.raises(UserError, match="needs 'language', missing in 3 of 3 rows.*remove the reward"):
        check_requirements([spec], records, allow_partial=True)
