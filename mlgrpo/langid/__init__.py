"""Language identification: which language a text is in, among the languages an experiment uses.

    from mlgrpo.langid import LanguageIdentifier, LangGuess, identify
    identify("Guten Tag", candidates=["de", "nl"])        # LangGuess(language='de', confidence=...)
    LanguageIdentifier(["zh", "ja"]).identify_many(texts)  # cached per text

Answers are ISO 639-1 codes, or "und" with confidence 0 when the text has no letters, is garbled,
mixes languages, or the backend is not confident enough; confidences are calibrated per backend.
Backends are found by name in a registry ("default", "script", "ngram", "fasttext", "lingua",
"langdetect"); models load on first use, and mlgrpo's own n-gram model (`trained`, trained on the
package text of `corpus`) is built the first time it is needed, then cached.
Sits between the data layer and sampling: knows nothing about files, models' training, TRL or MLflow.
"""

from mlgrpo.langid.codes import KNOWN_CODES, UNDETERMINED
from mlgrpo.langid.identifier import DEFAULT_MIN_CONFIDENCE, LangGuess, LanguageIdentifier, identify
from mlgrpo.langid.registry import BACKENDS

__all__ = [
    "BACKENDS",
    "DEFAULT_MIN_CONFIDENCE",
    "KNOWN_CODES",
    "UNDETERMINED",
    "LangGuess",
    "LanguageIdentifier",
    "identify",
]
