"""mlgrpo's `rouge_l` as a Hugging Face evaluate module, loadable offline from its folder.

    import evaluate
    from mlgrpo.evaluation.hf import hf_metric_path
    metric = evaluate.load(hf_metric_path("rouge_l"))
    metric.compute(predictions=["北京欢迎你"], references=[["北京欢迎你"]], languages="zh")

The numbers are those of mlgrpo.evaluation (see mlgrpo.evaluation.hf for the returned keys).
"""

import evaluate

from mlgrpo.evaluation import hf


class RougeL(evaluate.Metric):
    """ROUGE-L F-measure (0-100) from rouge-score, with a tokenizer that keeps every script: words, or
    characters where words are not space-delimited (an identical Chinese pair scores 100)."""

    def _info(self):
        return hf.metric_info(self, "rouge_l")

    def _compute(self, predictions, references, languages=None):
        return hf.compute("rouge_l", predictions, references, languages)
