"""The registry of language-ID backends, and the one signature they all share.

A backend scores a screened text (`Sample`) against a set of candidate languages and returns
`[(code, probability), ...]`, best first, restricted to the candidates; an empty list means "cannot
tell". Screening (empty, garbled, mixed text) and the confidence threshold belong to the identifier,
not to backends. The identifier looks a backend up by name and never branches on it.
Knows nothing about files, the CLI or any particular model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from mlgrpo.langid.script import script_shares
from mlgrpo.registry import Registry

Scores = list[tuple[str, float]]


class Sample:
    """A screened text (NFC, no surrogates or U+FFFD, has letters) and facts computed once about it."""

    def __init__(self, text: str):
        self.text = text

    @cached_property
    def shares(self) -> dict[str, float]:
        """Script shares of the letters (see `script.script_shares`)."""
        return script_shares(self.text)


@dataclass(frozen=True)
class Backend:
    name: str
    summary: str  # one line for `--help` and error messages
    languages: Callable[[], frozenset[str]]  # every ISO 639-1 code it can answer (may load labels)
    scores: Callable[[Sample, frozenset[str]], Scores]  # (sample, candidates) -> best first
    # Loads now the models that scoring these candidates needs (otherwise loaded on first use); None
    # when there is nothing to load.
    load: Callable[[frozenset[str]], None] | None = None
    # Scores many samples at once (a model that batches); None: `scores` one by one.
    scores_many: Callable[[Sequence[Sample], frozenset[str]], list[Scores]] | None = None
    # Calibration: probabilities are raised to 1/temperature and renormalised, so that a confidence of
    # 0.9 is right about 9 times in 10 (fitted on the corpus's tune split, `bench.bench_langid --tune`).
    temperature: float = 1.0
    # Scores many samples calibrated at a temperature in the same pass (a softmax over logits: calibrating
    # is dividing them by it, `calibrate`'s result without its per-pair Python); None: `calibrate` after.
    calibrated_many: Callable[[Sequence[Sample], frozenset[str], float], list[Scores]] | None = None

    def probabilities(self, sample: Sample, candidates: frozenset[str]) -> Scores:
        """The backend's calibrated probabilities of the candidates, best first ([]: cannot tell)."""
        return self.probabilities_many([sample], candidates)[0]

    def probabilities_many(self, samples: Sequence[Sample], candidates: frozenset[str]) -> list[Scores]:
        if self.calibrated_many:
            return self.calibrated_many(samples, candidates, self.temperature)
        found = self.scores_many(samples, candidates) if self.scores_many else [self.scores(s, candidates) for s in samples]
        return [calibrate(scores, self.temperature) for scores in found]


def calibrate(scores: Scores, temperature: float) -> Scores:
    """Probabilities raised to 1/temperature and renormalised to the mass they had (temperature 1:
    unchanged; a lone answer keeps its probability), best first.

    >>> [(c, round(p, 2)) for c, p in calibrate([("de", 0.8), ("nl", 0.2)], 2.0)]
    [('de', 0.67), ('nl', 0.33)]
    >>> calibrate([("ko", 0.9)], 2.0)
    [('ko', 0.9)]
    """
    if temperature == 1.0 or len(scores) < 2:
        return scores
    powered = [(code, p ** (1.0 / temperature)) for code, p in scores]
    total = sum(p for _, p in powered)
    if total == 0:
        return []
    mass = sum(p for _, p in scores)
    return [(code, mass * p / total) for code, p in powered]


BACKENDS: Registry[Backend] = Registry("language-ID backend", plural="backends")


def register(backend: Backend) -> Backend:
    """Add a backend under its name; a second backend with the same name is a programming error."""
    return BACKENDS.add(backend.name, backend)


def get_backend(name: str) -> Backend:
    """The backend called `name`; UserError naming the closest valid names otherwise."""
    return BACKENDS.get(name)
