"""mlgrpo's `distinct` as a Hugging Face evaluate module, loadable offline from its folder.

    import evaluate
    from mlgrpo.evaluation.hf import hf_metric_path
    metric = evaluate.load(hf_metric_path("distinct"))
    metric.compute(predictions=["one two one two", "one two"], languages="en")

The numbers are those of mlgrpo.evaluation (see mlgrpo.evaluation.hf for the returned keys).
"""

import evaluate

from mlgrpo.evaluation import hf


class Distinct(evaluate.Metric):
    """distinct-1 and distinct-2: distinct unit n-grams over all n-grams of a language's outputs, 0-1."""

    def _info(self):
        return hf.metric_info(self, "distinct")

    def _compute(self, predictions, languages=None):
        return hf.compute("distinct", predictions, None, languages)
