"""Errors before anything trains, each as file:line: key: reason, and what a valid file gives."""

from __future__ import annotations

import json
import re

import pytest

from mlgrpo.data.suites import load_suite
from mlgrpo.experiments import load_experiment

from .conftest import edited, line_of


def test_typo_names_file_line_key_and_the_closest_valid_key(load_error):
    text = edited("  learning_rate: 2.0e-4", "  lerning_rate: 2.0e-4")
    message, path = load_error(text)
    assert message == (f"{path}:{line_of(text, 'lerning_rate')}: training.lerning_rate: unknown trl.GRPOConfig "
                       "field 'lerning_rate' (did you mean 'learning_rate'?)")


@pytest.mark.parametrize("old, new, needle, key, reason", [
    ("num_generations: 16 ", "num_generations: 1 ", "num_generations", "training.num_generations",
     "the group size must be at least 2, got 1"),
    ("per_device_train_batch_size: 64", "per_device_train_batch_size: 62", "per_device_train_batch_size",
     "training.per_device_train_batch_size", "use per_device_train_batch_size 60 (15 prompts per rollout) or 64 (16 "
     "prompts per rollout)"),
    ("[en, es, ru, ar, ja, sw]", "[en, es, ru, ar, ja, sw, klingon]", "languages:", "data.languages", "unknown language 'klingon'"),
    ("  max_steps: 250", "  max_steps: many", "max_steps", "training.max_steps", "expected an integer, got the text"),
    ("  loss_type: dapo", "  seed: 3", "seed: 3", "training.seed", "seed is set by the platform"),
    ("  loss_type: dapo", "  beta: 0.04", "beta: 0.04", "training.beta", "the KL to the reference is the kl section"),
    ("  minibatches: 4 ", "  minibatches: 0 ", "minibatches: 0", "update.minibatches", "must be a whole number >= 1"),
    ("  estimator: k3 ", "  estimator: k4 ", "estimator: k4", "kl.estimator", "unknown KL estimator 'k4' (did you mean"),
    ("seeds: [0, 1]", "seeds: 0", "seeds:", "seeds", "expected a list of integers, got 0"),
    ('policy: "tiny:', 'policy: !!python/object:os.system "tiny:', "policy", "model.policy", "tag !!python/object"),
    ("  per_language: 50 ", "  per_language: 500 ", "per_language: 500", "evaluation.per_language",
     "asks for 500 rows in 'en', but that split has 196"),
    ("    - name: chrf", "    - name: chrff", "chrff", "rewards.rewards[1]", "(did you mean 'chrf'?)"),
    ("      weight: 0.5", "      wieght: 0.5", "wieght", "rewards.rewards[1].wieght",
     "unknown key 'wieght' (did you mean 'weight'?)"),
    ("metrics: [exact_match,", "metrics: [exact_mach,", "metrics:", "evaluation.metrics",
     "(did you mean 'exact_match'?)"),
    ("name: quickstart", "name: quick start", "name: quick", "name", "must start with a letter or digit"),
])
def test_each_error_class_points_at_its_line(load_error, old, new, needle, key, reason):
    text = edited(old, new)
    message, path = load_error(text)
    assert message.startswith(f"{path}:{line_of(text, needle)}: {key}: ")
    assert reason in message


@pytest.mark.parametrize("old, new, key, reason", [
    ("seeds: [0, 1]\n", "", "seeds", "missing; every experiment needs it, e.g. `seeds: [0, 1]`"),
    ("run:\n", "runn:\n", "runn", "unknown section 'runn' (did you mean 'run'?)"),
])
def test_missing_and_unknown_sections(load_error, old, new, key, reason):
    message, _ = load_error(edited(old, new))
    assert f": {key}: {reason}" in message


@pytest.mark.parametrize("override, key, reason", [
    ("{data: {suite: dates}}", "arms.grpo.data", "an arm cannot change data: every arm trains on the same data"),
    ("{trainig: {beta: 0.1}}", "arms.grpo.trainig", "(did you mean 'training'?)"),
    ("{model: {policy: other}}", "arms.grpo.model.policy", "an arm may change only model.lora"),
    ("{training: {num_generations: 6}}", "arms.grpo.training.per_device_train_batch_size",
     "256 completions is not a multiple of num_generations 6"),
    ("{kl: {coef: 0.1, placement: reward}}", "arms.grpo.kl", "kl.placement reward needs per-token rewards"),
    ("{kl: {coef: 0.1, estimator: k1}}", "arms.grpo.kl", "TRL's loss computes k3 only"),
    ("{algorithm: {name: ppo, advantage: {estimator: gae}, ppo: {kl_coef: 0.1}}}", "arms.grpo.algorithm.ppo.kl_coef",
     "the KL is the kl section now"),
    ("{sampler: {name: oversample, oversample: {de: 2.0}}}", "arms.grpo.sampler.oversample.de",
     "'de' is not among the experiment's languages"),
    ("{sampler: {name: balanced, seed: 3}}", "arms.grpo.sampler.seed", "seeded with the run's seed"),
    ("{algorithm: {name: ppo}}", "arms.grpo.algorithm", "algorithm ppo needs a per-token estimator (gae)"),
    ("{algorithm: {name: ppo, advantage: {estimator: gae}, dynamic_sampling: {enabled: true}}}", "arms.grpo.algorithm",
     "dynamic_sampling is for GRPO-family arms: PPO's advantages come from its critic"),
    ("{algorithm: {dynamic_sampling: {enabled: true, max_rounds: 0}}}",
     "arms.grpo.algorithm.dynamic_sampling.max_rounds", "must be a whole number >= 1"),
    ("{algorithm: {dynamic_sampling: {enabled: yes please}}}", "arms.grpo.algorithm.dynamic_sampling.enabled", ""),
    ("{update: {group_schedule: [{step: 50, size: 6}]}}", "arms.grpo.update.group_schedule[0]",
     "size 6 does not divide the 256 completions of a rollout (per_device_train_batch_size 64 x 4 micro-batches)"),
    ("{update: {group_schedule: [{step: 0, size: 32}]}}", "arms.grpo.update.group_schedule[0]",
     "size 32 at step 0 but num_generations is 16"),
    ("{update: {group_schedule: [{step: 50, size: 32}]}, algorithm: {dynamic_sampling: {enabled: true}}}",
     "arms.grpo.update.group_schedule", "cannot be combined with algorithm.dynamic_sampling yet"),
])
def test_arm_errors_point_at_the_arm(load_error, override, key, reason):
    text = edited("  grpo: {}", f"  grpo: {override}")
    message, path = load_error(text)
    assert message.startswith(f"{path}:{line_of(text, 'grpo: {')}: {key}: ")
    assert reason in message


def test_a_shared_mistake_is_reported_once_at_the_shared_line(load_error):
    text = edited("  learning_rate: 2.0e-4 ", "  learning_rate: fast ")
    message, path = load_error(text)
    assert message == (f"{path}:{line_of(text, 'learning_rate: fast')}: training.learning_rate: expected a number, got "
                       "the text 'fast' (write numbers without quotes)")


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


FILE_EXPERIMENT = """\
name: from-file
model: {policy: tiny}
data:
  file: rows.jsonl
  prompt_field: question
rewards:
  rewards:
    - name: exact_match
training: {num_generations: 4, per_device_train_batch_size: 8, max_steps: 3}
arms: {grpo: {}}
seeds: [0]
evaluation: {per_language: 5, metrics: [length_chars, distinct_1]}
"""


def test_a_reward_that_needs_references_the_data_lacks(write, load_error, tmp_path):
    rows = load_suite("countries", languages=["de", "sw"])
    write_rows(tmp_path / "rows.jsonl", [{"question": r["prompt"], "language": r["language"]} for r in rows])
    message, path = load_error(FILE_EXPERIMENT)
    assert re.match(rf"{re.escape(str(path))}:6: rewards: the data: reward 'exact_match' needs 'answers' or "
                    r"'reference', missing in (\d+) of \1 rows \(first: 'rows.jsonl:\d+'\)", message)
    # Without that reward the same data is fine, and the languages come from the file.
    text = FILE_EXPERIMENT.replace("- name: exact_match", "- {name: format, params: {pattern: '.+'}}")
    ok = load_experiment(write(text, "ok.yaml"))
    assert ok.data.languages == ("de", "sw") and set(ok.data_summary) == {"de", "sw"}


def test_a_metric_that_needs_references_the_eval_rows_lack(load_error, tmp_path):
    rows = load_suite("countries", languages=["de"])
    write_rows(tmp_path / "rows.jsonl", [{"question": r["prompt"], "language": "de"} for r in rows])
    text = FILE_EXPERIMENT.replace("- name: exact_match", "- {name: format, params: {pattern: '.+'}}")
    message, path = load_error(text.replace("metrics: [length_chars, distinct_1]", "metrics: [length_chars, chrf]"))
    assert message == (f"{path}:12: evaluation.metrics: chrf needs 'answers' or 'reference' in every eval row, but "
                       "5 of 5 have none; remove chrf or add the field")


def test_a_language_with_no_rows_in_a_file(load_error, tmp_path):
    rows = load_suite("countries", languages=["de"])
    write_rows(tmp_path / "rows.jsonl", [{"question": r["prompt"], "reference": r["reference"], "language": "de"}
                                         for r in rows])
    text = FILE_EXPERIMENT.replace("  prompt_field: question", "  prompt_field: question\n  languages: [de, sw]")
    message, path = load_error(text)
    assert message.startswith(f"{path}:6: data.languages: no train rows in 'sw': a language with no data")


def test_relative_data_paths_are_read_from_the_experiment_folder(write, tmp_path, monkeypatch):
    rows = load_suite("numbers", languages=["es"])
    write_rows(tmp_path / "rows.jsonl", [{"question": r["prompt"], "reference": r["reference"], "language": "es"}
                                         for r in rows])
    path = write(FILE_EXPERIMENT)
    monkeypatch.chdir(tmp_path.parent)
    experiment = load_experiment(path)
    assert experiment.data.file == str(tmp_path / "rows.jsonl")
    assert experiment.data_summary["es"][1] == 5


def test_overrides_that_change_nothing_and_twin_arms_are_noted(write):
    text = edited("  grpo: {}", "  grpo: {training: {loss_type: dapo}}\n  grpo-again: {}")
    notes = load_experiment(write(text)).notes
    assert "arm 'grpo' sets training.loss_type to \"dapo\", which it already is: the override changes nothing" in notes
    assert any(note.startswith("arms 'grpo' and 'grpo-again' resolve to the same configuration") for note in notes)


def test_defaults_are_filled_in_at_load_time(write):
    text = edited("run:\n  workers: auto           # one single-threaded worker per core\n  checkpoint_every: 20\n", "")
    experiment = load_experiment(write(text))
    assert experiment.run_settings.output_dir == "runs/quickstart"
    assert experiment.tracking_experiment == "quickstart"
    assert experiment.run_settings.workers == "auto"
