"""The bridge between the metric registry and Hugging Face `evaluate` modules.

`evaluate.load("bleu")` fetches a script from the hub and fails offline; `evaluate.load(path)` with a
local folder works. Each folder under hf_metrics/ holds one small script whose class calls `compute`
here, so users can call mlgrpo's metrics the HF way, offline, with the same numbers as the harness:

    import evaluate
    from mlgrpo.evaluation.hf import hf_metric_path
    bleu = evaluate.load(hf_metric_path("bleu"))
    bleu.compute(predictions=["我住在北京"], references=[["我住在北京"]], languages="zh")
    # {'bleu': 100.0, 'bleu_per_language': {'zh': 100.0}, 'tokenizers': {'zh': 'zh'}, 'notes': []}

`languages` is one code for every row or a list aligned with the predictions (default: "und", and
the tokenizer then falls back by script, which the notes say). The overall score is the macro
average over languages (for one language, its score). Imports `evaluate` only when a module is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlgrpo.errors import UserError

HF_METRICS_DIR = Path(__file__).resolve().parent / "hf_metrics"
# evaluate module name -> the registry metrics it reports, and whether it reads references.
MODULES: dict[str, tuple[tuple[str, ...], bool]] = {
    "exact_match": (("exact_match",), True),
    "token_f1": (("token_f1",), True),
    "rouge_l": (("rouge_l",), True),
    "chrf": (("chrf",), True),
    "bleu": (("bleu",), True),
    "language_consistency": (("language_consistency", "code_switch"), False),
    "distinct": (("distinct_1", "distinct_2"), False),
}


def hf_metric_path(name: str) -> str:
    """The local folder to give `evaluate.load` for module `name`."""
    if name not in MODULES:
        raise UserError(f"no evaluate module {name!r}; there are: {', '.join(MODULES)}")
    return str(HF_METRICS_DIR / name)


def metric_info(module, name: str):
    """evaluate.MetricInfo for module `name` (its docstring is the description)."""
    import datasets
    import evaluate

    text = datasets.Value("string")
    if MODULES[name][1]:
        features = [datasets.Features({"predictions": text, "references": datasets.Sequence(text)}),
                    datasets.Features({"predictions": text, "references": text})]
    else:
        features = datasets.Features({"predictions": text})
    return evaluate.MetricInfo(
        module_type="metric", description=type(module).__doc__ or name, citation="",
        inputs_description="predictions: list of str (None: an empty output); references: list of str or of lists "
                           "of accepted answers; languages: one ISO 639-1 code or one per prediction",
        features=features)


def _languages(languages: str | Sequence[str] | None, n: int) -> list[str | None]:
    if languages is None or isinstance(languages, str):
        return [languages] * n
    languages = list(languages)
    if len(languages) != n:
        raise ValueError(f"{len(languages)} languages for {n} predictions; give one code, or one per prediction")
    return languages


def compute(name: str, predictions: Sequence[Any], references: Sequence[Any] | None,
            languages: str | Sequence[str] | None) -> dict:
    """{"<metric>": macro over languages, "<metric>_per_language": {...}, "notes": [...]} (+ "tokenizers")."""
    from mlgrpo.evaluation.compute import evaluate_texts
    from mlgrpo.evaluation.report import aggregate

    metrics, _ = MODULES[name]
    records = [{"language": lang} for lang in _languages(languages, len(predictions))]
    for record, answers in zip(records, references or []):
        record["answers"] = [answers] if isinstance(answers, str) else list(answers or [])
    scores = evaluate_texts(list(predictions), records, metrics)
    aggregates, _ = aggregate(scores.per_language, dict.fromkeys(metrics))
    result: dict[str, Any] = {}
    for metric in metrics:
        per_language = {lang: s[metric] for lang, s in scores.per_language.items() if metric in s}
        macro = aggregates.get(metric, {}).get("macro")
        if macro is None and len(per_language) == 1:  # only "und": its score is the score
            macro = next(iter(per_language.values()))
        result[metric] = macro
        result[f"{metric}_per_language"] = per_language
    if "bleu" in metrics:
        result["tokenizers"] = scores.tokenizers
    result["notes"] = scores.notes
    return result
