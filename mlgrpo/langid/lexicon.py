"""Words that are plainly a language's own: its common words and its calendar words.

    common_words(language) -> frozenset of normalised words (`ngram.normalise`)
    in_common_words(text, language) -> whether every word of `text` is one of them
    in_listed_words(text, language, min_zipf) -> whether wordfreq lists every word of it for the language

A word at least COMMON_ZIPF frequent in the language's wordfreq list (Zipf 4: 10 per million words) is a
word of that language, whoever else writes it: "September" is German as much as English, "dispositivo"
Spanish as much as Portuguese. wordfreq has no list for some languages (Swahili, Thai), so two CLDR sources
count too: the language's month and day names, a closed class taken whole ("Juni" is Swahili's June, and
every date in Swahili is written with them), and its other CLDR words (calendar fields, units) from the
corpus's train split only, so that no held-out benchmark text is in the lexicon for having been drawn. Knows nothing
about models or scores.
"""

from __future__ import annotations

import functools

from mlgrpo.langid import corpus, ngram

COMMON_ZIPF = 4.0
LISTED_ZIPF = 2.0


@functools.cache
def common_words(language: str) -> frozenset[str]:
    """`language`'s words at Zipf COMMON_ZIPF or more in wordfreq, and its CLDR words of the train split."""
    found = _normalised(corpus.word_frequencies(language, min_frequency=10 ** (COMMON_ZIPF - 9)))
    for text in corpus.texts(language, "train", sources=("words",))["words"]:
        found.update(ngram.normalise(text).split())
    tables = corpus.cldr_tables(language)
    for text in tables.get("months", set()) | tables.get("days", set()):  # closed classes: every split
        found.update(ngram.normalise(text).split())
    return frozenset(found)


def in_common_words(text: str, language: str) -> bool:
    """Whether `text` has words and every one is a common word of `language`.

    >>> in_common_words("Sobre este documento", "pt"), in_common_words("Registro cerrado", "pt")
    (True, False)
    >>> in_common_words("14. September 1994", "de"), in_common_words("21 Julai 1967", "sw")
    (True, True)
    """
    words = ngram.normalise(text).split()
    return bool(words) and set(words) <= common_words(language)


@functools.lru_cache(maxsize=256)
def neighbours_words(language: str, others: frozenset[str]) -> frozenset[str]:
    """The common words of `others` that `language` does not write: absent from its large wordfreq list (down to
    Zipf LISTED_ZIPF) and from its common words. Empty where wordfreq has no large list for `language`, for a
    small list's absence says little ("angivet" is Swedish, and not in the small Swedish list). Only this
    difference is kept: the large list itself (~300k words, ~60 MB as a set) is read and dropped."""
    theirs = frozenset().union(*(common_words(other) for other in others if other != language))
    large = corpus.word_frequencies(language, "large", min_frequency=10 ** (LISTED_ZIPF - 9)) if theirs else {}
    if not large:
        return frozenset()
    return frozenset(theirs - _normalised(large) - common_words(language))


def _normalised(words) -> set[str]:
    """The words as `ngram.normalise` splits them. A word of lower-case letters only is its own split, and most
    listed words are: they skip the regular expression (the large lists hold ~300k-1M words each)."""
    found: set[str] = set()
    for word in words:
        if word.isalpha() and word.casefold() == word:
            found.add(word)
        else:
            found.update(ngram.normalise(word).split())
    return found


def foreign_word(text: str, language: str, others) -> str | None:
    """A word of `text` that `language` never writes while it is a common word of one of `others`
    (`neighbours_words`): Portuguese "limpar" in Spanish ("limpiar"). None when there is none, or when
    `language` has no large list to tell (Danish, Swahili).

    >>> foreign_word("Limpar todos", "es", ["pt"]), foreign_word("Criar", "es", ["pt"])
    ('limpar', None)
    """
    theirs = neighbours_words(language, frozenset(others) - {language})
    return next((word for word in ngram.normalise(text).split() if word in theirs), None)



@functools.lru_cache(maxsize=128)
def listed_words(language: str, min_zipf: float) -> frozenset[str]:
    """`language`'s words at Zipf `min_zipf` or more in its wordfreq list (the large one where there is one; the
    small lists stop near Zipf 3); empty without a list (Swahili, Thai)."""
    floor = 10 ** (min_zipf - 9)
    return frozenset(_normalised(corpus.word_frequencies(language, "large", min_frequency=floor)
                                 or corpus.word_frequencies(language, min_frequency=floor)))


def in_listed_words(text: str, language: str, min_zipf: float) -> bool:
    """Whether `text` has words and `language` lists every one at Zipf `min_zipf` or more: a word it writes,
    borrowed or not ("email" is listed for Danish at 3.7).

    >>> in_listed_words("Email", "da", 3.5), in_listed_words("optional", "da", 3.5)
    (True, False)
    """
    words = ngram.normalise(text).split()
    return bool(words) and set(words) <= listed_words(language, min_zipf)
