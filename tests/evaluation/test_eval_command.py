"""`mlgrpo eval` end to end on a saved tiny model folder: JSON report, table, baseline comparison."""

from __future__ import annotations

import argparse
import json

import pytest

from mlgrpo.commands import eval as eval_command
from mlgrpo.errors import UserError


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mlgrpo")
    eval_command.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["eval", *argv])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, tiny_policy):
    model, tokenizer = tiny_policy
    folder = tmp_path_factory.mktemp("policy")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def common(model_dir, out) -> list[str]:
    return ["--model", str(model_dir), "--data", "suite:numbers", "--languages", "en,ja", "--per-language", "3",
            "--max-new-tokens", "4", "--samples-per-language", "1", "--no-mlflow", "--output", str(out)]


def test_writes_the_report_and_prints_the_table(model_dir, tmp_path, capsys):
    out = tmp_path / "report.json"
    assert eval_command.run(parse(common(model_dir, out))) == 0
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["model"] == str(model_dir) and document["data"] == "suite:numbers"
    assert list(document["per_language"]) == ["en", "ja"] and document["rows"] == {"en": 3, "ja": 3}
    assert document["tokenizers"] == {"en": "13a", "ja": "ja-mecab"}
    assert len(document["samples"]) == 2 and document["changes"] == {}
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].split()[:3] == ["language", "rows", "exact_match"]
    assert "macro" in printed and "not measured: " in printed and f"report: {out}" in printed


def test_baseline_adds_changes_and_collapse_flags(model_dir, tmp_path, capsys):
    first, second = tmp_path / "step0.json", tmp_path / "end.json"
    eval_command.run(parse(common(model_dir, first)))
    eval_command.run(parse([*common(model_dir, second), "--baseline", str(first)]))
    changes = json.loads(second.read_text(encoding="utf-8"))["changes"]
    # The same model on the same prompts: nothing changed and nothing collapsed.
    assert changes["eval/collapse/en"] == 0.0 and changes["eval/collapse/ja"] == 0.0
    assert changes["eval/change/exact_match/ja"] == 0.0
    assert "collapse since the baseline: none" in capsys.readouterr().out


def test_bad_arguments_fail_before_generation_as_user_errors(model_dir, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"per_language": {}}', encoding="utf-8")
    with pytest.raises(UserError, match="bad.json is not an evaluation report"):
        eval_command.run(parse([*common(model_dir, tmp_path / "x.json"), "--baseline", str(bad)]))
    with pytest.raises(UserError, match="cannot read the baseline report"):
        eval_command.run(parse([*common(model_dir, tmp_path / "x.json"), "--baseline", str(tmp_path / "none.json")]))
    with pytest.raises(UserError, match="folder .*nowhere does not exist"):
        eval_command.run(parse(common(model_dir, tmp_path / "nowhere" / "x.json")))
    with pytest.raises(UserError, match="unknown tiny option .colour."):
        eval_command.run(parse([*common("tiny:colour=red", tmp_path / "x.json")]))


@pytest.mark.slow
def test_one_mlflow_run_with_metrics_report_and_samples(model_dir, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLGRPO_CACHE", str(tmp_path / "cache"))  # the tracker's outbox lives there
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    argv = [a for a in common(model_dir, tmp_path / "r.json") if a != "--no-mlflow"]
    assert eval_command.run(parse([*argv, "--tracking-uri", uri, "--experiment", "eval-test"])) == 0
    client = mlflow.MlflowClient(tracking_uri=uri)
    [run] = client.search_runs([client.get_experiment_by_name("eval-test").experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags["mlgrpo.kind"] == "eval"
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert run.data.metrics["eval/exact_match/ja"] == report["per_language"]["ja"]["exact_match"]
    assert run.data.metrics["eval/chrf/macro"] == pytest.approx(report["aggregates"]["chrf"]["macro"])
    assert run.data.params["sampled_k"] == "0" and run.data.params["languages"] == "en,ja"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"eval_report.json", "eval_samples.json"} <= artifacts
