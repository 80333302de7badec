"""LanguageIdentifier: one text in, one ISO 639-1 code (or "und") and a confidence out.

Screens the text (`screen`), refuses text that mixes languages, asks the chosen backend, and
answers "und" below the confidence threshold. Results are cached per text. Backends are looked up
by name in the registry; this module never branches on which one it has.
Knows nothing about files or the CLI.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mlgrpo.errors import UserError
from mlgrpo.langid import combined, models  # noqa: F401  (importing them registers the backends)
from mlgrpo.langid.codes import KNOWN_CODES, UNDETERMINED, parse_candidates
from mlgrpo.langid.registry import Sample, get_backend
from mlgrpo.langid.script import foreign_share
from mlgrpo.langid.screen import letter_weight, parts, screen, sentence_break

# The default backend's top probability is right 95% of the time above 0.5 on the benchmark's
# tuning sample of short names and UI strings, where 87% of texts pass it (bench/bench_langid.py).
DEFAULT_MIN_CONFIDENCE = 0.5
# A part of a text is identified on its own when it has at least this many letters (a Han, kana or
# Hangul character counts 3) and, in scripts written with spaces, two words: a one-word technical
# term or name ("PostgreSQL" in a Greek sentence) does not make a text mixed.
MIN_PART_WEIGHT = 12
# A text is mixed when parts holding at least MIXED_SHARE of all its letters give its language a
# probability below FOREIGN_BELOW on their own ("Good morning, how are you? Доброе утро, как дела?":
# the Russian part gives English nothing). Parts that the backend cannot tell count as agreeing.
MIXED_SHARE = 0.4
FOREIGN_BELOW = 0.1
# Entries kept per identifier before the cache starts over (a text and a LangGuess: ~200 bytes).
CACHE_SIZE = 100_000
# Texts a batching backend scores in one pass (bounds the memory of its n-gram arrays).
BATCH = 2048


@dataclass(frozen=True)
class LangGuess:
    language: str  # ISO 639-1 code, or "und" when undetermined
    confidence: float  # the backend's probability of `language`, 0.0 for "und"


UNKNOWN = LangGuess(UNDETERMINED, 0.0)


class LanguageIdentifier:
    """Identifies the language of texts among `candidates` (None: every known language).

    Candidates are the languages the caller says a text may be in: a backend renormalises its
    probabilities over them, so "Guten Tag" among [de, nl] is German with more confidence than
    among all languages; a text whose script no candidate writes is "und", and so is, with the
    default backend, a text that fastText is sure is in another language. Without candidates every
    known language competes: short texts get lower confidence, and backend "lingua" loads all 75 of
    its models (about 1 GB, ten seconds).
    """

    def __init__(
        self,
        candidates: Sequence[str] | None = None,
        backend: str = "default",
        min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    ):
        if not 0.0 <= min_confidence <= 1.0:
            raise UserError(f"min_confidence must be between 0 and 1, got {min_confidence}")
        self.backend = get_backend(backend)
        self.candidates = parse_candidates(candidates) or KNOWN_CODES
        if self.backend.languages().isdisjoint(self.candidates):
            raise UserError(
                f"backend {backend!r} cannot identify any of {', '.join(sorted(self.candidates))}: "
                "choose another backend (e.g. 'default') or other candidates"
            )
        self.min_confidence = min_confidence
        self._cache: dict[str, LangGuess] = {}

    def identify(self, text: str) -> LangGuess:
        if not isinstance(text, str):
            raise TypeError(f"identify() takes a str, got {type(text).__name__}")
        guess = self._cache.get(text)
        if guess is None:
            guess = self._identify(text)
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            self._cache[text] = guess
        return guess

    def load(self, languages: Iterable[str] | None = None) -> None:
        """Load the backend's models for `languages` (default: every candidate) now rather than on first use."""
        if self.backend.load is not None:
            self.backend.load(self.candidates if languages is None else frozenset(languages) & self.candidates)

    def clear_cache(self) -> None:
        self._cache.clear()

    def identify_many(self, texts: Iterable[str]) -> list[LangGuess]:
        """One guess per text, in order; a text seen before is answered from the cache. Texts not seen
        before go to the backend together (a batching backend scores them in one pass)."""
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"identify_many() takes str texts, got {type(text).__name__}")
        new = list(dict.fromkeys(t for t in texts if t not in self._cache))
        for start in range(0, len(new), BATCH):
            batch = new[start : start + BATCH]
            cleaned = [screen(text) for text in batch]
            guesses = iter(self._guess_many([Sample(c) for c in cleaned if c is not None]))
            if len(self._cache) + len(batch) > CACHE_SIZE:
                self._cache.clear()
            for text, clean in zip(batch, cleaned):
                self._cache[text] = UNKNOWN if clean is None else next(guesses)
        return [self._cache[text] if text in self._cache else self.identify(text) for text in texts]

    def _identify(self, text: str) -> LangGuess:
        clean = screen(text)
        return UNKNOWN if clean is None else self._guess_many([Sample(clean)])[0]

    def _guess_many(self, samples: list[Sample]) -> list[LangGuess]:
        """Guesses for screened texts: the backend's best language above the threshold, then "und" for the
        texts that mix languages (`_foreign_weight`). The parts of every text that may mix languages are
        scored in the same pass as the texts (a second pass cost as much again in fixed costs as its parts)."""
        # One sentence can only mix languages through letters of more than one script.
        breaks = {k for k, sample in enumerate(samples) if sentence_break(sample.text)}
        pieces_of = {k: pieces for k, sample in enumerate(samples) if (k in breaks or len(sample.shares) > 1)
                     and len(pieces := parts(sample.text, MIN_PART_WEIGHT)) >= 2}
        extra = [Sample(piece) for pieces in pieces_of.values() for piece, _ in pieces]
        found = self.backend.probabilities_many(samples + extra, self.candidates)
        scored = iter(found[len(samples):])
        guesses = []
        for k, (sample, scores) in enumerate(zip(samples, found)):
            of_parts = [next(scored) for _ in pieces_of.get(k, ())]
            if not scores or scores[0][1] < self.min_confidence:
                guesses.append(UNKNOWN)
                continue
            language, confidence = scores[0]
            mixed = k in pieces_of and (k in breaks or foreign_share(sample.shares, language) >= MIXED_SHARE)
            if mixed and _foreign_weight(pieces_of[k], of_parts, language) >= MIXED_SHARE * letter_weight(sample.text):
                guesses.append(UNKNOWN)
            else:
                guesses.append(LangGuess(language, float(confidence)))
        return guesses


def _foreign_weight(pieces: list[tuple[str, int]], scores: list, language: str) -> int:
    """The letters of the parts that give `language` less than FOREIGN_BELOW on their own (parts the
    backend cannot tell count as agreeing)."""
    return sum(weight for (_, weight), found in zip(pieces, scores) if found and dict(found).get(language, 0.0) < FOREIGN_BELOW)


@functools.lru_cache(maxsize=32)
def _shared_identifier(candidates: frozenset[str] | None) -> LanguageIdentifier:
    return LanguageIdentifier(None if candidates is None else sorted(candidates))


def identify(text: str, candidates: Sequence[str] | None = None) -> LangGuess:
    """The language of `text` with the default backend and threshold (identifiers are reused)."""
    return _shared_identifier(parse_candidates(candidates)).identify(text)
