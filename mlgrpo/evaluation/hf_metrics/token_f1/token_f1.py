"""mlgrpo's `token_f1` as a Hugging Face evaluate module, loadable offline from its folder.

    import evaluate
    from mlgrpo.evaluation.hf import hf_metric_path
    metric = evaluate.load(hf_metric_path("token_f1"))
    metric.compute(predictions=["二十一"], references=[["二十"]], languages="zh")

The numbers are those of mlgrpo.evaluation (see mlgrpo.evaluation.hf for the returned keys).
"""

import evaluate

from mlgrpo.evaluation import hf


class TokenF1(evaluate.Metric):
    """SQuAD-style token F1 (0-100), best over the accepted answers; units are words, or characters
    (with their combining marks) in Chinese, Japanese, Thai and other scripts written without spaces."""

    def _info(self):
        return hf.metric_info(self, "token_f1")

    def _compute(self, predictions, references, languages=None):
        return hf.compute("token_f1", predictions, references, languages)
