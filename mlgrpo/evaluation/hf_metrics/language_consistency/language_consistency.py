"""mlgrpo's `language_consistency` as a Hugging Face evaluate module, loadable offline from its folder.

    import evaluate
    from mlgrpo.evaluation.hf import hf_metric_path
    metric = evaluate.load(hf_metric_path("language_consistency"))
    metric.compute(predictions=["Γεια σου", "Hello κόσμε"], languages="el")

The numbers are those of mlgrpo.evaluation (see mlgrpo.evaluation.hf for the returned keys).
"""

import evaluate

from mlgrpo.evaluation import hf


class LanguageConsistency(evaluate.Metric):
    """Language consistency (share of outputs mostly in their row's language) and code-switch rate
    (share of output letters in another language or script), 0-1 per language."""

    def _info(self):
        return hf.metric_info(self, "language_consistency")

    def _compute(self, predictions, languages=None):
        return hf.compute("language_consistency", predictions, None, languages)
