"""The "script", "ngram" and "default" backends.

The default spends time only where it buys accuracy (constants chosen on the corpus's tune split,
`python -m bench.bench_langid --tune`, and reported on its test split and on catalogues never trained on):
1. scripts and letters: when they leave one language whatever the candidates (Hangul -> ko), answer;
2. fastText lite, unrestricted: when it is sure of a language that is not a candidate (but writes the
   text's scripts), answer nothing; when the scripts leave one candidate, answer it;
3. otherwise mlgrpo's n-gram model (`trained`) on the letters of the scripts the candidates write, plus
   FASTTEXT_WEIGHT * log(fastText's own probability + FASTTEXT_FLOOR), as a softmax over the candidates.
   The softmax's temperature is the backend's calibration (`registry.Backend.temperature`).
Candidates the n-gram model does not know get the mean of the known candidates' model scores, so that
fastText alone ranks them. Knows nothing about screening, thresholds, files or the CLI.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mlgrpo.langid.codes import KNOWN_CODES
from mlgrpo.langid.models import fasttext_masses
from mlgrpo.langid.registry import Backend, Sample, Scores, register
from mlgrpo.langid.script import SCRIPT_LANGUAGES, allowed_languages, coverage, script_of, script_scores, writers

# Above this probability of a language that is not a candidate (but writes the text's scripts),
# the text is taken to be in that language, and the answer is "und". Short names reach 0.9-0.94 for a
# neighbour ("איראן" -> yi, "फुलाह" -> mr); sentences reach 0.97.
OUTSIDER_SURE = 0.97
# fastText's weight in the default's score, and the probability added to it so that its zero is no veto.
FASTTEXT_WEIGHT = 1.0
FASTTEXT_FLOOR = 1e-3
# `chinese_or_japanese` scores characters and character pairs (HAN_ORDER), whose scores spread less than
# those of 1-5-grams and words; scaled by HAN_SCALE they meet the default's temperature. Pairs tell Japanese
# words of Chinese characters from Chinese ones (名前, 引数, 最終更新: Japanese; 名字, 参数, 最后更新: Chinese),
# which characters alone did not. On the consistency benchmark's tune split (the model with Plone's
# catalogues), Japanese text judged in a Chinese row: 8 of 150 with characters alone (scale 5), 7 with pairs
# (scale 3); Chinese text in a Japanese row: 6 -> 1; correct Japanese 246 -> 247 of 250, Chinese 250 both.
HAN_SCALE = 3.0
HAN_ORDER = 2
# Han characters that Chinese (both scripts) and Japanese write alike in numbers and dates: numerals,
# the ordinal prefix and 年月日. A text of these alone ("第九十六万七千九百二十八", "二〇二六年") is written
# the same way in both languages and is as Chinese as it is Japanese. (Simplified 亿 and 两, and
# traditional 萬 and 兩, are one language's only, and still vote.)
HAN_SHARED = frozenset("〇零一二三四五六七八九十百千万億兆第年月日")
# Calibration temperatures (registry.Backend.temperature), fitted on the tune sample by
# `python -m bench.bench_langid --tune`: the scores of a naive Bayes model are far too sure of themselves.
NGRAM_TEMPERATURE = 4.6
DEFAULT_TEMPERATURE = 5.7


def script_only_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    return script_scores(sample.text, sample.shares, candidates)


def script_backend_languages() -> frozenset[str]:
    return frozenset().union(*SCRIPT_LANGUAGES.values())


def softmax(codes: Sequence[str], scores: Sequence[float]) -> Scores:
    """[(code, p)] best first, p proportional to exp(score) (plain Python: K is small, NumPy's per-call
    overhead is not).

    >>> [(c, round(p, 3)) for c, p in softmax(["de", "nl"], [0.0, -math.log(3)])]
    [('de', 0.75), ('nl', 0.25)]
    """
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights)
    return sorted(((code, w / total) for code, w in zip(codes, weights)), key=lambda cp: -cp[1])


def in_scripts_of(text: str, shares: dict[str, float], languages: frozenset[str]) -> str:
    """`text` without the letters of scripts that none of `languages` writes ("Wagtail 表单" -> " 表单"
    for zh and ja): an embedded name in another script says nothing about which of them it is."""
    if len(shares) < 2:
        return text
    foreign = {script for script in shares if not writers(script, languages)}
    if not foreign:
        return text
    return "".join(" " if script_of(ch) in foreign else ch for ch in text)


def _model_scores(texts: list[str], candidates: list[tuple[str, ...]]) -> list[np.ndarray]:
    """The n-gram model's (K,) scores of each text for its candidates. One pass over all texts, scored
    against every language any of them may be in; each text then keeps its own candidates' columns."""
    from mlgrpo.langid.trained import scorer

    model = scorer()
    union = tuple(sorted(model.known(frozenset().union(*candidates))))
    found = np.zeros((len(texts), len(union)))
    if union and texts:
        found = model.log_scores(texts, union)
    column = {code: i for i, code in enumerate(union)}
    out = []
    for row, codes in zip(found, candidates):
        known = [column[c] for c in codes if c in column]
        mine = row[known]
        if len(known) < len(codes):  # unknown to the model: the mean of the known (fastText decides them)
            fill = mine.mean() if len(known) else 0.0
            mine = np.array([row[column[c]] if c in column else fill for c in codes])
        out.append(mine)
    return out


class _Pending:
    """What step 3 needs for one text: its candidates, the text the model reads, fastText's masses."""

    def __init__(self, codes: tuple[str, ...], text: str, masses: dict[str, float]):
        self.codes, self.text, self.masses = codes, text, masses


def _prepare(sample: Sample, candidates: frozenset[str]) -> Scores | _Pending:
    """Steps 1-2, or what step 3 needs."""
    allowed = allowed_languages(sample.text, sample.shares, candidates)
    if not allowed:
        return []
    possible = allowed_languages(sample.text, sample.shares, KNOWN_CODES)
    if len(possible) == 1:
        return script_scores(sample.text, sample.shares, candidates)  # Hangul is Korean, whatever else
    masses = fasttext_masses(sample.text)
    best = max(masses, key=masses.__getitem__, default=None)  # None: only labels without a code
    if best in possible and best not in candidates and masses[best] >= OUTSIDER_SURE:
        return []  # fastText is sure the text is in a language the caller ruled out
    if len(allowed) == 1:  # decisive among the candidates, and no outsider is sure
        (language,) = allowed
        return [(language, coverage(sample.shares, allowed)[language])]
    codes = tuple(sorted(allowed))
    return _Pending(codes, in_scripts_of(sample.text, sample.shares, allowed), masses)


def _finish(pending: _Pending, model: np.ndarray) -> Scores:
    masses = pending.masses
    return softmax(pending.codes, [m + FASTTEXT_WEIGHT * math.log(masses.get(c, 0.0) + FASTTEXT_FLOOR)
                                   for c, m in zip(pending.codes, model.tolist())])


def default_scores_many(samples: Sequence[Sample], candidates: frozenset[str]) -> list[Scores]:
    prepared = [_prepare(sample, candidates) for sample in samples]
    pending = [(i, p) for i, p in enumerate(prepared) if isinstance(p, _Pending)]
    if pending:
        model = _model_scores([p.text for _, p in pending], [p.codes for _, p in pending])
        for (i, p), scores in zip(pending, model):
            prepared[i] = _finish(p, scores)
    return prepared  # type: ignore[return-value]


def default_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    return default_scores_many([sample], candidates)[0]


def chinese_or_japanese(texts: Sequence[str]) -> list[Scores]:
    """Calibrated zh / ja probabilities of Han text from its characters and character pairs alone: is it
    plausibly Chinese, is it plausibly Japanese? Both write "三百九十六" and "2009年6月21日" alike, and longer
    n-grams only echo which language's training text held more numbers (the full model gives "三百九十六" ja
    0.95), while characters and pairs still tell 删除 (Chinese) from 削除 (Japanese). Text of numerals and
    date characters alone (HAN_SHARED) is 0.5 each. For language consistency, not identification."""
    from mlgrpo.langid.trained import scorer

    if not texts:
        return []
    found = HAN_SCALE * scorer().log_scores(list(texts), ("ja", "zh"), max_order=HAN_ORDER, with_words=False) / DEFAULT_TEMPERATURE
    return [[("ja", 0.5), ("zh", 0.5)] if _shared_han(text) else softmax(("ja", "zh"), row)
            for text, row in zip(texts, found.tolist())]


def _shared_han(text: str) -> bool:
    """Whether every Han character of `text` is one both languages write alike (HAN_SHARED), and it has one."""
    han = [ch for ch in text if script_of(ch) == "Han"]
    return bool(han) and all(ch in HAN_SHARED for ch in han)


def ngram_scores_many(samples: Sequence[Sample], candidates: frozenset[str]) -> list[Scores]:
    """The n-gram model alone (no scripts, no fastText), over the candidates it knows."""
    from mlgrpo.langid.trained import scorer

    codes = tuple(sorted(scorer().known(candidates)))
    if not codes or not samples:
        return [[] for _ in samples]
    found = scorer().log_scores([s.text for s in samples], codes)
    return [softmax(codes, row) for row in found.tolist()]


def ngram_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    return ngram_scores_many([sample], candidates)[0]


def ngram_languages() -> frozenset[str]:
    from mlgrpo.langid.corpus import corpus_languages

    return corpus_languages()


def _load_model(candidates: frozenset[str]) -> None:
    from mlgrpo.langid.trained import scorer

    fasttext_masses("")  # loads the fastText model
    model = scorer()
    model.warm(candidates)  # pages the candidates' rows in


register(Backend("script", "Unicode scripts and letters, no model: answers where they decide, else 'und'",
                 script_backend_languages, script_only_scores))
register(Backend("ngram", "mlgrpo's character n-gram and word model, trained on package data at first use",
                 ngram_languages, ngram_scores, _load_model, scores_many=ngram_scores_many, temperature=NGRAM_TEMPERATURE))
register(
    Backend(
        "default",
        "scripts, then fastText lite (outsiders), then mlgrpo's n-gram model mixed with fastText",
        script_backend_languages,  # every known code: the scripts table covers them all
        default_scores,
        _load_model,
        scores_many=default_scores_many,
        temperature=DEFAULT_TEMPERATURE,
    )
)
