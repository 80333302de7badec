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
# Han characters that Chinese (both scripts) and Japanese write alike in numbers and dates: numerals,
# the ordinal prefix and 年月日. A text of these alone ("第九十六万七千九百二十八", "二〇二六年") is written
# the same way in both languages and is as Chinese as it is Japanese. (Simplified 亿 and 两, and
# traditional 萬 and 兩, are one language's only, and still vote.)
HAN_SHARED = frozenset("〇零一二三四五六七八九十百千万億兆第年月日")
# Calibration temperatures (registry.Backend.temperature), fitted on the tune sample by
# `python -m bench.bench_langid --tune`: the scores of a naive Bayes model are far too sure of themselves.
# (Refitted 2026-12-02: the 5.2 and 5.9 shipped before no longer matched what --tune gives for the code as it was,
# 4.9 and 5.7, nor does the fastText threshold move the default's.)
NGRAM_TEMPERATURE = 4.9
DEFAULT_TEMPERATURE = 5.7


def script_only_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    return script_scores(sample.text, sample.shares, candidates)


def script_backend_languages() -> frozenset[str]:
    return frozenset().union(*SCRIPT_LANGUAGES.values())


def softmax_rows(codes: Sequence[str], logits: np.ndarray) -> list[Scores]:
    """Row by row of `logits` (N, K): [(code, p)] best first, p proportional to exp(logit). One NumPy pass
    for all rows; what is left in Python is building the pairs.

    >>> [[(c, round(p, 3)) for c, p in row] for row in softmax_rows(["de", "nl"], np.array([[0.0, -np.log(3)], [0.0, 0.0]]))]
    [[('de', 0.75), ('nl', 0.25)], [('de', 0.5), ('nl', 0.5)]]
    """
    if not len(logits):
        return []
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities = weights / weights.sum(axis=1, keepdims=True)
    order = np.argsort(-probabilities, axis=1, kind="stable")
    ranked = np.take_along_axis(probabilities, order, axis=1).tolist()
    name = list(codes).__getitem__
    return [list(zip(map(name, row), ps)) for row, ps in zip(order.tolist(), ranked)]


def in_scripts_of(text: str, shares: dict[str, float], languages: frozenset[str]) -> str:
    """`text` without the letters of scripts that none of `languages` writes ("Wagtail 表单" -> " 表单"
    for zh and ja): an embedded name in another script says nothing about which of them it is."""
    if len(shares) < 2:
        return text
    foreign = {script for script in shares if not writers(script, languages)}
    if not foreign:
        return text
    return "".join(" " if script_of(ch) in foreign else ch for ch in text)


def _model_scores(texts: list[str], codes: tuple[str, ...]) -> tuple[dict[str, int], np.ndarray]:
    """The n-gram model's scores of each text, (N, K'), against those of `codes` it knows, and each one's column."""
    from mlgrpo.langid.trained import scorer

    model = scorer()
    known = tuple(model.known(codes))
    found = model.log_scores(texts, known) if known and texts else np.zeros((len(texts), len(known)))
    return {code: i for i, code in enumerate(known)}, found


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


def _finish(pending: list[_Pending], column: dict[str, int], found: np.ndarray, temperature: float) -> list[Scores]:
    """Step 3 for texts that share their candidates, given the n-gram model's scores `found` (their rows;
    `column`: each language's column): those plus fastText's, as a softmax at `temperature` (calibrating a
    softmax is dividing its logits by the temperature). Candidates the model does not know get the mean of
    the known ones' scores (fastText decides them)."""
    codes = pending[0].codes
    known = [i for i, code in enumerate(codes) if code in column]
    logits = np.zeros((len(pending), len(codes)))
    if known:
        logits[:, known] = found[:, [column[codes[i]] for i in known]]
        if len(known) < len(codes):
            unknown = [i for i in range(len(codes)) if codes[i] not in column]
            logits[:, unknown] = logits[:, known].mean(axis=1, keepdims=True)
    masses = np.array([[p.masses.get(code, 0.0) for code in codes] for p in pending])
    logits += FASTTEXT_WEIGHT * np.log(masses + FASTTEXT_FLOOR)
    return softmax_rows(codes, logits / temperature)


def default_probabilities_many(samples: Sequence[Sample], candidates: frozenset[str], temperature: float) -> list[Scores]:
    """Steps 1-3 for each sample, calibrated at `temperature` (steps 1-2 answer one language or none, which
    calibration leaves as it is)."""
    prepared = [_prepare(sample, candidates) for sample in samples]
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, p in enumerate(prepared):
        if isinstance(p, _Pending):
            groups.setdefault(p.codes, []).append(i)
    for codes, members in groups.items():  # a Latin text is not scored for Russian: one pass per candidate set
        column, found = _model_scores([prepared[i].text for i in members], codes)
        for i, scores in zip(members, _finish([prepared[i] for i in members], column, found, temperature)):
            prepared[i] = scores
    return prepared  # type: ignore[return-value]


def default_scores_many(samples: Sequence[Sample], candidates: frozenset[str]) -> list[Scores]:
    return default_probabilities_many(samples, candidates, 1.0)


def default_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    return default_probabilities_many([sample], candidates, 1.0)[0]


def chinese_or_japanese(texts: Sequence[str]) -> list[Scores]:
    """Calibrated zh / ja probabilities of Han text: the default backend between the two languages alone, except
    that text of numerals and date characters alone (HAN_SHARED: "三百九十六", "2009年6月21日"), which both write
    alike, is 0.5 each (the model gives "三百九十六" ja 0.95: its Japanese training text holds more numbers).
    For language consistency, not identification.

    Until issue 28 this was characters and character pairs alone (the naive Bayes table up to order 2, at a
    temperature of its own): on Han-only segments of whole catalogues never tuned on (django CMS, Oscar, humanize,
    mkdocs-material) that judged 58% of the Japanese ones at least 0.4 times as Chinese as Japanese, the whole model
    31% (Chinese ones the other way: 2.5% -> 4.4%; the tune catalogues: 41% -> 27%, 1.4% -> 2.6%)."""
    from mlgrpo.langid.registry import BACKENDS, Sample

    if not texts:
        return []
    found = BACKENDS["default"].probabilities_many([Sample(t) for t in texts], frozenset(("ja", "zh")))
    return [[("ja", 0.5), ("zh", 0.5)] if _shared_han(text) else list(row) for text, row in zip(texts, found)]


def _shared_han(text: str) -> bool:
    """Whether every Han character of `text` is one both languages write alike (HAN_SHARED), and it has one."""
    han = [ch for ch in text if script_of(ch) == "Han"]
    return bool(han) and all(ch in HAN_SHARED for ch in han)


def ngram_probabilities_many(samples: Sequence[Sample], candidates: frozenset[str], temperature: float) -> list[Scores]:
    """The n-gram model alone (no scripts, no fastText), over the candidates it knows, at `temperature`."""
    from mlgrpo.langid.trained import scorer

    codes = tuple(sorted(scorer().known(candidates)))
    if not codes or not samples:
        return [[] for _ in samples]
    return softmax_rows(codes, scorer().log_scores([s.text for s in samples], codes) / temperature)


def ngram_scores_many(samples: Sequence[Sample], candidates: frozenset[str]) -> list[Scores]:
    return ngram_probabilities_many(samples, candidates, 1.0)


def ngram_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    return ngram_probabilities_many([sample], candidates, 1.0)[0]


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
                 ngram_languages, ngram_scores, _load_model, scores_many=ngram_scores_many, temperature=NGRAM_TEMPERATURE,
                 calibrated_many=ngram_probabilities_many))
register(
    Backend(
        "default",
        "scripts, then fastText lite (outsiders), then mlgrpo's n-gram model mixed with fastText",
        script_backend_languages,  # every known code: the scripts table covers them all
        default_scores,
        _load_model,
        scores_many=default_scores_many,
        temperature=DEFAULT_TEMPERATURE,
        calibrated_many=default_probabilities_many,
    )
)
