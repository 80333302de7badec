"""Evaluation: per-language scores of a policy on held-out sets, during training and standalone.

    generation (greedy; k samples for pass@k) -> text metrics (registry) -> rewards, reward model,
      KL to the reference, safety classifier -> per-language scores -> aggregates -> EvalReport

    from mlgrpo.evaluation import evaluate_policy, evaluate_texts, EvalReport, collapse_warnings
    report = evaluate_policy(model, tokenizer, records)           # generates, then scores
    scores = evaluate_texts(outputs, records, metrics=["bleu"])   # outputs you already have

Text metrics are pure functions in a registry (registry.py); every language-specific tokenizer
choice is in tokenization.py and is recorded in the report. The metrics also load as Hugging Face
`evaluate` modules from local paths (hf_metrics/, see `hf_metric_path`).
Knows nothing about trainers, advantages or MLflow (the tracking layer logs `EvalReport.flat()`);
importing it loads neither torch, transformers nor mlflow.
"""

from __future__ import annotations

from mlgrpo.evaluation.compute import TextScores, evaluate_texts, mean_by_language
from mlgrpo.evaluation.policy import evaluate_policy
from mlgrpo.evaluation.registry import METRICS, Metric, get_metric, metric_names, register
from mlgrpo.evaluation.report import COLLAPSE_METRICS, EvalReport, aggregate, collapse_warnings
from mlgrpo.evaluation.tokenization import TokenizerChoice, bleu_tokenizer, units

__all__ = [
    "COLLAPSE_METRICS", "METRICS", "EvalReport", "Metric", "TextScores", "TokenizerChoice", "aggregate",
    "bleu_tokenizer", "collapse_warnings", "evaluate_policy", "evaluate_texts", "get_metric", "mean_by_language",
    "metric_names",
    "register", "units",
]
