"""The metrics as Hugging Face `evaluate` modules: they load offline from local folders and give the
harness's numbers."""

from __future__ import annotations

import pytest

evaluate = pytest.importorskip("evaluate")

from mlgrpo.errors import UserError  # noqa: E402
from mlgrpo.evaluation import evaluate_texts  # noqa: E402
from mlgrpo.evaluation.hf import MODULES, hf_metric_path  # noqa: E402

PREDICTIONS = ["我住在北京市中心", "twenty one", None]
REFERENCES = [["我住在北京市中心"], ["twenty-one", "twenty one"], ["three"]]
LANGUAGES = ["zh", "en", "en"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_module_loads_offline_and_matches_the_harness(name):
    metrics, needs_references = MODULES[name]
    module = evaluate.load(hf_metric_path(name))
    kwargs = {"references": REFERENCES} if needs_references else {}
    got = module.compute(predictions=PREDICTIONS, languages=LANGUAGES, **kwargs)
    records = [{"language": lang, "answers": answers} for lang, answers in zip(LANGUAGES, REFERENCES)]
    expected = evaluate_texts(PREDICTIONS, records, metrics)
    for metric in metrics:
        per_language = {lang: s[metric] for lang, s in expected.per_language.items() if metric in s}
        assert got[f"{metric}_per_language"] == pytest.approx(per_language)
        assert got[metric] == pytest.approx(sum(per_language.values()) / len(per_language))
    assert "1 output(s) were None; scored as empty outputs" in got["notes"]


def test_single_references_one_language_and_the_recorded_tokenizer():
    import sacrebleu

    bleu = evaluate.load(hf_metric_path("bleu"))
    outputs, answers = ["我住在北京市中心", "今天天气很好"], ["我住在北京市中心", "今天天气不错"]
    got = bleu.compute(predictions=outputs, references=answers, languages="zh")
    assert got["bleu"] == pytest.approx(sacrebleu.corpus_bleu(outputs, [answers], tokenize="zh").score)
    assert got["tokenizers"] == {"zh": "zh"}
    rouge = evaluate.load(hf_metric_path("rouge_l"))
    assert rouge.compute(predictions=["北京欢迎你"], references=["北京欢迎你"], languages="zh")["rouge_l"] == 100.0


def test_without_languages_the_fallback_is_reported():
    got = evaluate.load(hf_metric_path("bleu")).compute(predictions=["สวัสดีครับ"], references=[["สวัสดีครับ"]])
    assert got["tokenizers"] == {"und": "char"} and any("no tokenizer for language 'und'" in n for n in got["notes"])


def test_unknown_module_name():
    with pytest.raises(UserError, match="no evaluate module 'sacrebleu'"):
        hf_metric_path("sacrebleu")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_module_file_in_place_computes_what_evaluate_loads(name):
    # evaluate.load runs a copy of the script from its cache; this runs the file mlgrpo ships, where
    # coverage and a reader find it, and checks that it is the same module.
    import importlib.util
    from pathlib import Path

    path = Path(hf_metric_path(name)) / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"mlgrpo_hf_{name}", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    [metric_class] = [v for v in vars(script).values()
                      if isinstance(v, type) and issubclass(v, evaluate.Metric) and v is not evaluate.Metric]
    kwargs = {"references": REFERENCES} if MODULES[name][1] else {}
    in_place = metric_class().compute(predictions=PREDICTIONS, languages=LANGUAGES, **kwargs)
    loaded = evaluate.load(hf_metric_path(name)).compute(predictions=PREDICTIONS, languages=LANGUAGES, **kwargs)
    assert in_place == loaded
