"""The "script" backend and the "default" backend, which combines script, fastText and lingua.

The default spends time only where it buys accuracy (measured in bench/bench_langid.py, tuned on a
sample drawn with another seed than the reported one):
1. scripts and letters: when they leave one language whatever the candidates (Hangul -> ko), answer;
2. fastText lite: when it is sure of a language that is not a candidate, answer nothing; when the
   scripts leave one candidate (Cyrillic among [ru, en]), answer it; when it is sure among the
   candidates the scripts allow, answer (0.02-0.1 ms). "Sure" is stricter when lingua would compare
   only a few languages (Persian, Urdu, Arabic; Russian, Ukrainian): lingua is cheap there, and
   fastText lite is overconfident between languages that share a script;
3. otherwise mix it with lingua over the same candidates, log-linearly (a weighted product of the
   two distributions, renormalised): lingua is better on short names, fastText breaks its ties.
Knows nothing about screening, thresholds, files or the CLI.
"""

from __future__ import annotations

import math

from mlgrpo.langid.codes import KNOWN_CODES
from mlgrpo.langid.models import (
    fasttext_masses,
    fasttext_restricted,
    lingua_languages,
    lingua_load,
    lingua_scores,
)
from mlgrpo.langid.registry import Backend, Sample, Scores, register
from mlgrpo.langid.script import SCRIPT_LANGUAGES, allowed_languages, coverage, script_scores

# Above this probability fastText's answer stands alone, when lingua would compare more than
# LINGUA_FEW_LANGUAGES (the 11 Latin-script candidates of the benchmark: ~0.16 ms a call). On the
# tuning sample 21% of texts fall below it and go on to lingua; at 0.9 (27% to lingua) accuracy was
# 0.3 point higher and the default about 10% slower, which missed the speed goal (bench/bench_langid.py).
FASTTEXT_SURE = 0.8
# The same when lingua would compare at most LINGUA_FEW_LANGUAGES: a call then costs ~0.05 ms, and
# fastText lite is overconfident between languages that share a script (it gives Urdu names 0.99
# Persian: "انگریزی", "بیلجیم"; lingua gets them right). On the tuning sample (`bench.bench_langid
# --tuning`, disjoint from the reported one), 0.999 instead of 0.8 moved Urdu from 0.68 to 0.85,
# Ukrainian 0.87 -> 0.91, Chinese 0.95 -> 0.99, Persian 0.96 -> 0.89, Japanese 0.97 -> 0.93, all
# 0.885 -> 0.891, and sent 31% of the texts to lingua instead of 21% (~5% more time); 0.99 left
# Urdu near 0.83 (tried 0.8-1.0, with fastText weights 0-0.3).
FASTTEXT_SURE_FEW = 0.999
LINGUA_FEW_LANGUAGES = 3
# Above this probability of a language that is not a candidate (but writes the text's scripts),
# the text is taken to be in that language, and the answer is "und". Stricter than FASTTEXT_SURE:
# short names reach 0.9-0.94 for a neighbour ("איראן" -> yi, "फुलाह" -> mr); sentences reach 0.97.
OUTSIDER_SURE = 0.97
# fastText's exponent in the mix with lingua (lingua's is the rest), and the probability added to
# both before mixing, so that one model's zero does not veto the other. Best among weights 0.1-0.7
# and floors 1e-4-0.05 on the tuning sample (the weighted mean used before was 0.1-0.3 point lower).
FASTTEXT_WEIGHT = 0.1
MIX_FLOOR = 0.01
# Without candidates, a Latin-script text allows ~60 lingua languages (about 1 GB of models); above
# this many, lingua is asked only about the languages in fastText's answer.
LINGUA_MAX_LANGUAGES = 30


def script_only_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    return script_scores(sample.text, sample.shares, candidates)


def script_backend_languages() -> frozenset[str]:
    return frozenset().union(*SCRIPT_LANGUAGES.values())


def mix(first: Scores, second: Scores, first_weight: float, floor: float) -> Scores:
    """Log-linear mix of two distributions over the languages of either, best first:
    p(c) proportional to (first(c) + floor) ** first_weight * (second(c) + floor) ** (1 - first_weight).

    >>> [(c, round(p, 3)) for c, p in mix([("de", 0.9), ("nl", 0.1)], [("nl", 1.0)], 0.5, 0.0)]
    [('nl', 1.0), ('de', 0.0)]
    """
    one, two = dict(first), dict(second)
    logs = {
        code: _weighted_log(one.get(code, 0.0) + floor, first_weight)
        + _weighted_log(two.get(code, 0.0) + floor, 1 - first_weight)
        for code in one.keys() | two.keys()
    }
    top = max(logs.values(), default=-math.inf)
    if top == -math.inf:  # every language vetoed by one model or the other: cannot tell
        return []
    weights = {code: math.exp(v - top) for code, v in logs.items()}  # shifted: no underflow to 0/0
    total = sum(weights.values())
    return sorted(((code, w / total) for code, w in weights.items()), key=lambda cp: -cp[1])


def _weighted_log(p: float, weight: float) -> float:
    """weight * log(p), where a zero weight ignores p (even p = 0) and p = 0 vetoes otherwise."""
    if weight == 0:
        return 0.0
    return weight * math.log(p) if p > 0 else -math.inf


def default_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
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
    fast = fasttext_restricted(sample.text, masses, allowed)
    asked = allowed & lingua_languages()
    if len(asked) > LINGUA_MAX_LANGUAGES:
        asked &= {code for code, _ in fast}
    sure = FASTTEXT_SURE_FEW if len(asked) <= LINGUA_FEW_LANGUAGES else FASTTEXT_SURE
    if len(asked) < 2 or (fast and fast[0][1] >= sure):  # < 2: lingua cannot compare
        return fast
    return mix(fast, lingua_scores(sample, asked), FASTTEXT_WEIGHT, MIX_FLOOR)


def default_load(candidates: frozenset[str]) -> None:
    fasttext_masses("")  # loads the fastText model
    lingua_load(candidates)


register(Backend("script", "Unicode scripts and letters, no model: answers where they decide, else 'und'", script_backend_languages, script_only_scores))
register(
    Backend(
        "default",
        "scripts, then fastText lite, mixed with lingua when fastText is unsure",
        script_backend_languages,  # every known code: the scripts table covers them all
        default_scores,
        default_load,
    )
)

