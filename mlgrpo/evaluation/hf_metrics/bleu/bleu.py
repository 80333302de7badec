"""mlgrpo's `bleu` as a Hugging Face evaluate module, loadable offline from its folder.

    import evaluate
    from mlgrpo.evaluation.hf import hf_metric_path
    metric = evaluate.load(hf_metric_path("bleu"))
    metric.compute(predictions=["我住在北京市中心"], references=[["我住在北京市中心"]], languages="zh")

The numbers are those of mlgrpo.evaluation (see mlgrpo.evaluation.hf for the returned keys).
"""

import evaluate

from mlgrpo.evaluation import hf


class Bleu(evaluate.Metric):
    """sacrebleu's corpus BLEU (0-100) per language, with the language's tokenizer (zh, ja-mecab, char
    for Thai and other unspaced scripts offline, 13a for space-delimited languages); the choice is
    returned under "tokenizers"."""

    def _info(self):
        return hf.metric_info(self, "bleu")

    def _compute(self, predictions, references, languages=None):
        return hf.compute("bleu", predictions, references, languages)
