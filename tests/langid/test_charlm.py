"""The character language model: by hand, against a plain dictionary Witten-Bell model, and through its table."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from mlgrpo.langid import charlm, ngram, table


class DictionaryModel:
    """Interpolated Witten-Bell written the plain way: strings in dictionaries, recursion over the context."""

    def __init__(self, texts, weights, max_order=5):
        self.max_order = max_order
        self.n = defaultdict(float)  # n-gram -> weighted count
        self.c = defaultdict(float)  # context -> weighted count of what follows it
        self.follow = defaultdict(set)  # context -> the characters seen after it
        for text, weight in zip(texts, weights):
            s = ngram.normalise(text)
            for p in range(1, len(s)):  # s[0] is the opening pad: given, not predicted
                for k in range(1, min(max_order, p + 1) + 1):
                    gram = s[p - k + 1 : p + 1]
                    self.n[gram] += weight
                    self.c[gram[:-1]] += weight
                    self.follow[gram[:-1]].add(gram[-1])

    def probability(self, context: str, char: str) -> float:
        t = len(self.follow[context]) if context in self.c else 0
        if context == "":
            return (self.n.get(char, 0.0) + t / charlm.ALPHABET) / (self.c[""] + t)
        lower = self.probability(context[1:], char)
        if context not in self.c:
            return lower
        return (self.n.get(context + char, 0.0) + t * lower) / (self.c[context] + t)

    def log_likelihood(self, text: str) -> float:
        s = ngram.normalise(text)
        return sum(math.log(self.probability(s[max(0, p - self.max_order + 1) : p], s[p])) for p in range(1, len(s)))


def test_witten_bell_by_hand():
    # One text "ab" -> " ab ": predicted a, b, space. Unigrams a, b, " " once each: C0 = 3, T0 = 3.
    # P1(a) = (1 + 3/4096) / 6. Bigram " a" seen once after " ", which is followed by one type: C = 1, T = 1:
    # P2(a | " ") = (1 + 1 * P1(a)) / 2. The text's first character is read with the pad before it.
    model = charlm.fit(["ab"], [1.0])
    p1 = (1 + 3 / 4096) / 6
    assert model.base == pytest.approx(math.log(3 / 6))
    slots, bits = charlm.pack(model)
    joined = ngram.Joined(["a"])  # " a ": a after " ", then " " after " a"
    found = charlm.log_likelihoods(joined, ngram.grams(joined), [(slots, bits, model.base)])[0, 0]
    p_a = (1 + p1) / 2
    # " " after " a": trigram " a " unseen, context " a" followed by "b" once (C = 1, T = 1): 1/2 * P2(" " | "a");
    # bigram "a " unseen, context "a" followed by "b" once: 1/2 * P1(" "). So P = 1/4 * P1(" ").
    p_space = 0.25 * p1
    assert found == pytest.approx(math.log(p_a) + math.log(p_space), abs=0.01)


TRAIN = ["Nome do usuário", "nome de usuario", "usuário ativo", "Sobre este documento", "Registro cerrado",
         "año", "ação", "Имя пользователя", "GIMP 笔刷管道"]
TEXTS = ["nome", "usuária", "cerrado ativo", "documento do año", "пользователь", "笔刷", "xyz", "q"]


def test_equals_the_dictionary_model_on_seen_and_unseen_text():
    weights = [1.0, 2.0, 0.5, 1.0, 1.0, 3.0, 1.0, 1.0, 0.2]
    reference = DictionaryModel(TRAIN, weights)
    model = charlm.fit(TRAIN, weights)
    slots, bits = charlm.pack(model, bits=table.table_bits(len(model.keys)) + 4)  # room for every n-gram
    joined = ngram.Joined(TEXTS)
    found = charlm.log_likelihoods(joined, ngram.grams(joined), [(slots, bits, model.base)])[:, 0]
    expected = [reference.log_likelihood(t) for t in TEXTS]
    # float16 in the table: about 3 significant digits per character's log-probability
    np.testing.assert_allclose(found, expected, rtol=2e-3, atol=0.02)


def test_a_batch_scores_each_text_as_alone():
    model = charlm.fit(TRAIN, [1.0] * len(TRAIN))
    tables = [(*charlm.pack(model), model.base)]
    together = ngram.Joined(TEXTS)
    batch = charlm.log_likelihoods(together, ngram.grams(together), tables)[:, 0]
    alone = [charlm.log_likelihoods(j, ngram.grams(j), tables)[0, 0] for j in (ngram.Joined([t]) for t in TEXTS)]
    np.testing.assert_allclose(batch, alone)


def test_a_full_table_drops_long_rare_ngrams_first():
    model = charlm.fit(TRAIN, [1.0] * len(TRAIN))
    slots, bits = charlm.pack(model)
    stored = table.stored(slots, model.keys)
    assert stored[model.orders == 1].all()  # every character survives; what is dropped is longer on the whole
    assert model.orders[~stored].mean() > model.orders[stored].mean()
    assert stored.mean() > 0.85 and len(slots) >= 2 * len(model.keys)
