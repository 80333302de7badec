"""mlgrpo's `exact_match` as a Hugging Face evaluate module, loadable offline from its folder.

    import evaluate
    from mlgrpo.evaluation.hf import hf_metric_path
    metric = evaluate.load(hf_metric_path("exact_match"))
    metric.compute(predictions=["٣", "Zwanzig."], references=[["3"], ["zwanzig"]], languages=["ar", "de"])

The numbers are those of mlgrpo.evaluation (see mlgrpo.evaluation.hf for the returned keys).
"""

import evaluate

from mlgrpo.evaluation import hf


class ExactMatch(evaluate.Metric):
    """Exact match against all accepted answers, after mlgrpo.text.normalize_answer (case, width,
    punctuation, digits of every script, Arabic marks); a share in 0-1 per language."""

    def _info(self):
        return hf.metric_info(self, "exact_match")

    def _compute(self, predictions, references, languages=None):
        return hf.compute("exact_match", predictions, references, languages)
