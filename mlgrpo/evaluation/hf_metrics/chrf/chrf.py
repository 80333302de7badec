"""mlgrpo's `chrf` as a Hugging Face evaluate module, loadable offline from its folder.

    import evaluate
    from mlgrpo.evaluation.hf import hf_metric_path
    metric = evaluate.load(hf_metric_path("chrf"))
    metric.compute(predictions=["twenty-one"], references=[["twenty one"]], languages="en")

The numbers are those of mlgrpo.evaluation (see mlgrpo.evaluation.hf for the returned keys).
"""

import evaluate

from mlgrpo.evaluation import hf


class Chrf(evaluate.Metric):
    """sacrebleu's corpus chrF (0-100) per language, all accepted answers as references."""

    def _info(self):
        return hf.metric_info(self, "chrf")

    def _compute(self, predictions, references, languages=None):
        return hf.compute("chrf", predictions, references, languages)
