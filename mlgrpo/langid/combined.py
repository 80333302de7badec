"""The "script" backend and the "default" backend, which combines script, fastText and lingua.

The default spends time only where it buys accuracy (measured in bench/bench_langid.py, tuned on a
sample drawn with another seed than the reported one):
1. scripts and letters: when they leave one language whatever the candidates (Hangul -> ko), answer;
2. fastText lite: when it is sure of a language that is not a candidate, answer nothing; when the
   scripts leave one candidate (Cyrillic among [ru, en]), answer it; when it is sure among the
   candidates the scripts allow, answer (0.02-0.1 ms);
3. otherwise blend it with lingua over the same candidates (about 3x slower, better on short names).
Knows nothing about screening, thresholds, files or the CLI.
"""

from __future__ import annotations

from mlgrpo.langid.codes import KNOWN_CODES
from mlgrpo.langid.models import (
    fasttext_masses,
    fasttext_restricted,
    lingua_languages,
    lingua_scores,
)
from mlgrpo.langid.registry import Backend, Sample, Scores, register
from mlgrpo.langid.script import SCRIPT_LANGUAGES, allowed_languages, script_scores

# Above this probability fastText's answer stands alone. On the tuning sample 27% of texts fall
# below it and go on to lingua; asking lingua about more (below 0.95 or 0.99) gained under 0.1 point.
FASTTEXT_SURE = 0.9
# Above this probability of a language that is not a candidate (but writes the text's scripts),
# the text is taken to be in that language, and the answer is "und". Stricter than FASTTEXT_SURE:
# short names reach 0.9-0.94 for a neighbour ("איראן" -> yi, "फुलाह" -> mr); sentences reach 0.97.
OUTSIDER_SURE = 0.97
# fastText's share in the blend with lingua (lingua's is the rest). On short names lingua is the
# better of the two, fastText still breaks its ties: 0.2 was best among 0.2-0.5 on the tuning sample.
FASTTEXT_WEIGHT = 0.2
# Without candidates, a Latin-script text allows ~60 lingua languages (about 1 GB of models); above
# this many, lingua is asked only about the languages in fastText's answer.
LINGUA_MAX_LANGUAGES = 30


def script_only_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    return script_scores(sample.text, sample.shares, candidates)


def script_backend_languages() -> frozenset[str]:
    return frozenset().union(*SCRIPT_LANGUAGES.values())


def blend(first: Scores, second: Scores, first_weight: float) -> Scores:
    """Weighted mean of two distributions over languages, best first.

    >>> blend([("de", 0.6), ("nl", 0.4)], [("nl", 1.0)], 0.25)
    [('nl', 0.85), ('de', 0.15)]
    """
    mixed = {code: first_weight * p for code, p in first}
    for code, p in second:
        mixed[code] = mixed.get(code, 0.0) + (1 - first_weight) * p
    return sorted(mixed.items(), key=lambda cp: -cp[1])


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
        return script_scores(sample.text, sample.shares, candidates)
    fast = fasttext_restricted(sample.text, masses, allowed)
    if fast and fast[0][1] >= FASTTEXT_SURE:
        return fast
    asked = allowed & lingua_languages()
    if len(asked) > LINGUA_MAX_LANGUAGES:
        asked &= {code for code, _ in fast}
    if len(asked) < 2:  # lingua knows at most one of them: it cannot compare
        return fast
    return blend(fast, lingua_scores(sample, asked), FASTTEXT_WEIGHT)


register(Backend("script", "Unicode scripts and letters, no model: answers where they decide, else 'und'", script_backend_languages, script_only_scores))
register(
    Backend(
        "default",
        "scripts, then fastText lite, blended with lingua when fastText is unsure",
        script_backend_languages,  # every known code: the scripts table covers them all
        default_scores,
    )
)

