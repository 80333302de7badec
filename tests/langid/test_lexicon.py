"""The lexicon language consistency reads: common words (counted without a model) and neighbours' words."""

from __future__ import annotations

from mlgrpo.langid.lexicon import common_words, foreign_word, in_common_words, neighbours_words


def test_common_words_come_from_wordfreq_and_cldr_calendars():
    assert {"september", "november", "und"} <= common_words("de")
    # Swahili has no wordfreq list: its month and day names (CLDR, every split) are what it has
    assert {"juni", "julai", "alhamisi"} <= common_words("sw") and "matokeo" not in common_words("sw")
    assert in_common_words("14. September 1994", "de") and not in_common_words("14. Septembre 1994", "de")
    assert not in_common_words("123 !", "de")  # nothing to judge is not "all common"


def test_a_neighbours_word_is_one_the_row_language_does_not_write():
    assert foreign_word("Limpar todos", "es", ["pt", "es"]) == "limpar"  # Spanish writes "limpiar"
    assert foreign_word("Limpiar todos", "es", ["pt"]) is None
    assert foreign_word("Itens selecionados", "es", ["pt"]) == "itens"  # the first such word: Spanish "elementos"
    assert foreign_word("Itens selecionados", "es", []) is None  # no neighbour asked for
    # no large list, no verdict: absence from a small list says little
    assert neighbours_words("da", frozenset({"sv"})) == frozenset() and foreign_word("Skift telefon", "da", ["sv"]) is None
