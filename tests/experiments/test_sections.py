"""The experiment's own sections: what each refuses without looking at data or libraries."""

from __future__ import annotations

import pytest

from mlgrpo.experiments.fields import FieldError
from mlgrpo.experiments.sections import DataConfig, EvaluationConfig, Header, ModelConfig, RunSettings


def field_error(factory, **kwargs) -> FieldError:
    with pytest.raises(FieldError) as info:
        factory(**kwargs)
    return info.value


def test_model_specs(tmp_path):
    assert ModelConfig(policy="tiny:seed=2").policy == "tiny:seed=2"
    assert ModelConfig(policy="Qwen/Qwen2.5-0.5B-Instruct", dtype="bfloat16").dtype == "bfloat16"
    assert ModelConfig(policy=str(tmp_path)).policy == str(tmp_path)
    assert field_error(ModelConfig, policy="tiny:sed=2").field == "policy"
    assert "did you mean 'seed'" in str(field_error(ModelConfig, policy="tiny:sed=2"))
    assert field_error(ModelConfig, policy="tiny", dtype="bf16").field == "dtype"
    assert field_error(ModelConfig, policy="./no/such/folder").reason.startswith("folder")
    assert field_error(ModelConfig, policy="tiny", tokenizer="Qwen/Qwen2.5-0.5B").field == "tokenizer"


def test_data_suite_or_file():
    assert DataConfig(suite="numbers").share == 0.2
    assert field_error(DataConfig).field == "suite"
    assert field_error(DataConfig, suite="numbers", file="x.jsonl").field == "suite"
    assert "did you mean 'numbers'" in field_error(DataConfig, suite="number").reason
    error = field_error(DataConfig, suite="numbers", prompt_field="question")
    assert error.field == "prompt_field"
    assert error.reason == "applies to data files only, not to suite 'numbers'; remove it"
    assert field_error(DataConfig, file="x.jsonl", prompt_style="instruct").field == "prompt_style"
    assert field_error(DataConfig, file="x.jsonl", eval_file="y.jsonl", eval_share=0.1).field == "eval_share"


@pytest.mark.parametrize("kwargs, field", [
    ({"eval_share": 1.0}, "eval_share"),
    ({"languages": ()}, "languages"),
    ({"languages": ("en", "en")}, "languages"),
    ({"per_language": 0}, "per_language"),
    ({"languages": ("en",), "per_language": {"sw": 10}}, "per_language"),
])
def test_data_ranges(kwargs, field):
    assert field_error(DataConfig, suite="numbers", **kwargs).field == field


def test_per_language_count_for_every_language():
    data = DataConfig(suite="numbers", languages=("en", "sw"), per_language=30)
    assert data.train_counts() == {"en": 30, "sw": 30}
    assert DataConfig(suite="numbers").train_counts() is None


def test_evaluation():
    from mlgrpo.evaluation import metric_names

    assert set(EvaluationConfig().metrics) <= set(metric_names())
    assert "rewards are reported" in field_error(EvaluationConfig, metrics=("reward",)).reason
    error = field_error(EvaluationConfig, metrics=("chrf", "rouge"))
    assert error.field == "metrics" and "did you mean 'rouge_l'" in error.reason
    assert field_error(EvaluationConfig, per_language=0).field == "per_language"
    assert field_error(EvaluationConfig, every_steps=-1).field == "every_steps"
    assert field_error(EvaluationConfig, metrics=("chrf", "chrf")).field == "metrics"


def test_run_settings_and_header():
    assert RunSettings(workers=2).workers == 2
    assert field_error(RunSettings, workers="many").field == "workers"
    assert field_error(RunSettings, checkpoint_every=0).field == "checkpoint_every"
    assert field_error(Header, name="my study", seeds=(0,)).field == "name"
    assert field_error(Header, name="s", seeds=()).field == "seeds"
    assert "twice" in field_error(Header, name="s", seeds=(1, 1)).reason
    assert field_error(Header, name="s", seeds=(2**32,)).field == "seeds"
