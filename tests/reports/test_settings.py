"""mlgrpo.reports.settings: the report section's defaults, checks and how it is read back from MLflow."""

from __future__ import annotations

import pytest

from mlgrpo.errors import UserError
from mlgrpo.reports.settings import MIN_SEEDS, ReportConfig, fewest_seeds_for, from_resolved


def test_the_minimum_seeds_follows_from_the_test():
    # a two-sided sign flip over S paired seeds gives p >= 2 / 2**S: 0.0625 at 5, 0.03125 at 6
    assert fewest_seeds_for(0.05) == MIN_SEEDS == ReportConfig().min_seeds == 6
    assert 2 / 2**5 >= 0.05 > 2 / 2**6


def test_smallest_effects_default_per_metric_and_can_be_set():
    config = ReportConfig()
    assert config.smallest_effect("exact_match") == 0.02 and config.smallest_effect("chrf") == 1.0
    assert config.smallest_effect("reward/total") == 0.02 and config.smallest_effect("pass_at_4") == 0.02
    assert config.smallest_effect("kl_ref") == 0.0  # no default: every significant difference counts
    assert ReportConfig(min_effect={"chrf": 2.5}).smallest_effect("chrf") == 2.5


@pytest.mark.parametrize("kwargs, message", [({"min_seeds": 1}, "min_seeds: must be a whole number >= 2"),
                                             ({"min_effect": {"chrf": -1}}, "min_effect: chrf: must be a number >= 0"),
                                             ({"min_effect": {"chrf": float("inf")}}, "min_effect: chrf")])
def test_bad_settings_are_refused_in_one_line(kwargs, message):
    with pytest.raises(UserError, match=message):
        ReportConfig(**kwargs)


def test_read_back_from_the_logged_resolved_yaml():
    assert from_resolved(None) == (ReportConfig(), None)
    assert from_resolved("name: x\n") == (ReportConfig(), None)  # runs logged before the section existed
    config, warning = from_resolved("report:\n  min_seeds: 10\n  min_effect: {exact_match: 0.05}\n")
    assert warning is None and config.min_seeds == 10 and config.smallest_effect("exact_match") == 0.05
    config, warning = from_resolved("report:\n  min_seeds: 1\n")
    assert config == ReportConfig() and "could not be read" in warning


def test_the_experiment_file_section_is_checked_at_its_line_and_shared_by_every_arm(tmp_path):
    from pathlib import Path

    from mlgrpo.experiments import load_experiment

    shipped = (Path(__file__).parents[2] / "experiments" / "quickstart.yaml").read_text(encoding="utf-8")
    assert "\nreport:" in shipped  # the quickstart shows the section, with the defaults
    text = shipped.split("\nreport:")[0] + "\n"
    assert load_experiment_text(text, tmp_path).report == ReportConfig()
    path = tmp_path / "x.yaml"
    path.write_text(text + "report:\n  min_seeds: 8\n  min_effect: {chrf: 2}\n", encoding="utf-8")
    experiment = load_experiment(path)
    assert experiment.report == ReportConfig(min_seeds=8, min_effect={"chrf": 2.0})
    assert experiment.resolved()["report"] == {"min_seeds": 8, "min_effect": {"chrf": 2.0}}
    assert from_resolved(experiment.resolved_yaml())[0] == experiment.report  # what `mlgrpo report` reads back
    # the run's identity does not include it: a new threshold re-reads results, it does not re-train
    assert {r.config_hash for r in experiment.plan()} == {r.config_hash for r in load_experiment(
        Path(__file__).parents[2] / "experiments" / "quickstart.yaml").plan()}
    path.write_text(text + "report:\n  min_sedes: 6\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"x.yaml:\d+: report.min_sedes: unknown key .*did you mean 'min_seeds'"):
        load_experiment(path)
    path.write_text(text.replace("  grpo: {}", "  grpo: {report: {min_seeds: 3}}"), encoding="utf-8")
    with pytest.raises(UserError, match="arms.grpo.report: an arm cannot change report"):
        load_experiment(path)


def load_experiment_text(text: str, folder):
    from mlgrpo.experiments import load_experiment

    path = folder / "plain.yaml"
    path.write_text(text, encoding="utf-8")
    return load_experiment(path)
