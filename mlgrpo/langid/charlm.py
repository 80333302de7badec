"""A character language model per language: interpolated Witten-Bell over 1-5-grams, in a hashed table.

Why beside the naive Bayes table (`trained`): naive Bayes counts every n-gram of a text as independent
evidence, so one fact is counted many times: "Quellcode" starts with "q", and "q", " q", "qu", " qu",
"que", " que" each add French's higher frequency of "q" (the text went to French); and an n-gram a
language never saw costs it as much as the smoothing floor says, however ordinary its shorter parts
("ossetisk" lost to Swedish, which trained on "ossetiska"). A Markov model reads each character once,
given the four before it (Dunning 1994; Vatanen et al. 2010, "Language identification of short text
segments with n-gram models", found such models with smoothing best on short segments):

    log P(text | language) = sum over characters c after the opening pad of log P(c | the 4 characters before)
    P_k(c | h) = (N(hc) + T(h) P_(k-1)(c | h')) / (C(h) + T(h))       (Witten-Bell, interpolated)
    P_1(c)     = (N(c) + T0 U) / (C0 + T0),  U = 1 / ALPHABET

N: weighted n-gram counts; C(h): their sum over c; T(h): how many distinct c follow h; h': h without its
first character. A context never seen passes its order on unchanged (P_k = P_(k-1)). Seen n-grams are
stored with log P_k(c|h) and, as contexts, log T/(C+T) (the weight of backing off from them), so scoring
is one table read per character and order, and what `fit` computes equals a plain dictionary model
(`tests/langid/test_charlm.py`). Pure functions; knows nothing about languages or files.

Stored in a `table` (fingerprinted, two numbers per n-gram: log P and log backoff); its slots go to lower
orders and larger counts first, so a full pair drops a rare long n-gram (it then reads as unseen, as after
pruning), never a character.
"""

from __future__ import annotations

import math

import numpy as np

from mlgrpo.langid import ngram, table

ALPHABET = 4096  # the base distribution of a character never seen: uniform over this many
LOG_UNIFORM = -math.log(ALPHABET)


class Fitted:
    """An exact model: sorted n-gram keys (ngram.grams' hashes) with log P and, for contexts, log backoff."""

    def __init__(self, keys: np.ndarray, log_p: np.ndarray, log_backoff: np.ndarray, orders: np.ndarray,
                 counts: np.ndarray, base: float):
        self.keys, self.log_p, self.log_backoff = keys, log_p, log_backoff  # (M,) uint64, float64, float64 (0: not a context)
        self.orders, self.counts = orders, counts  # (M,) the n-gram's order and weighted count
        self.base = base  # log T0/(C0+T0): the weight of backing off from the empty context


def _predicted(joined: ngram.Joined) -> np.ndarray:
    """(n,) whether each point is a character the model predicts: not a separator, not a text's opening pad."""
    points = joined.points
    first = np.concatenate(([True], points[:-1] == ngram.SEPARATOR))
    return (points != ngram.SEPARATOR) & ~first


def fit(texts, weights, max_order: int = ngram.MAX_ORDER) -> Fitted:
    """The Witten-Bell model of `texts` (each counted `weights[i]` times: fractional counts are fine)."""
    joined = ngram.Joined(texts)
    grams = ngram.grams(joined, max_order)
    weight = np.asarray(weights, dtype=np.float64)[np.minimum(joined.separators_before[:len(joined.points)], len(texts) - 1)]
    keep = _predicted(joined)
    keys1, inverse = np.unique(grams[0][0][keep], return_inverse=True)
    n1 = np.bincount(inverse, weights=weight[keep])
    t0, c0 = len(keys1), n1.sum()
    p1 = (n1 + t0 / ALPHABET) / (c0 + t0)
    keys, probabilities, counts = [keys1], [p1], [n1]
    backoff_keys, backoffs = [], []
    for order in range(2, len(grams) + 1):
        mixed, valid = grams[order - 1]
        key, w = mixed[valid], weight[: len(mixed)][valid]
        context = grams[order - 2][0][: len(mixed)][valid]
        suffix = grams[order - 2][0][1 : len(mixed) + 1][valid]
        unique, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        n = np.bincount(inverse, weights=w)
        contexts, context_of = np.unique(context, return_inverse=True)
        c = np.bincount(context_of, weights=w)
        of_key = context_of[first]  # each distinct n-gram's context
        t = np.bincount(of_key, minlength=len(contexts)).astype(np.float64)
        lower = probabilities[-1][np.searchsorted(keys[-1], suffix[first])]  # the suffix was seen one order down
        keys.append(unique)
        probabilities.append((n + t[of_key] * lower) / (c[of_key] + t[of_key]))
        counts.append(n)
        backoff_keys.append(contexts)
        backoffs.append(np.log(t / (c + t)))
    every = np.concatenate(keys)
    orders = np.concatenate([np.full(len(k), i + 1) for i, k in enumerate(keys)])
    order = np.argsort(every, kind="stable")
    sorted_keys = every[order]
    log_backoff = np.zeros(len(sorted_keys))
    if backoff_keys:  # every context is an n-gram one order down, so it is among the keys
        log_backoff[np.searchsorted(sorted_keys, np.concatenate(backoff_keys))] = np.concatenate(backoffs)
    return Fitted(sorted_keys, np.log(np.concatenate(probabilities))[order], log_backoff, orders[order],
                  np.concatenate(counts)[order], math.log(t0 / (c0 + t0)))


def pack(model: Fitted, bits: int | None = None) -> tuple[np.ndarray, int]:
    """The model as a `table` (2**bits slots, twice the n-grams by default): log P high, log backoff low;
    lower orders and larger counts placed first."""
    rank = np.empty(len(model.keys), dtype=np.int64)
    rank[np.lexsort((-model.counts, model.orders))] = np.arange(len(model.keys))
    return table.pack(model.keys, model.log_p, model.log_backoff, rank, bits)


def log_likelihoods(joined: ngram.Joined, grams: list, tables: list[tuple[np.ndarray, int, float]],
                    max_order: int = ngram.MAX_ORDER) -> np.ndarray:
    """(N, K) log P(text | model) of each text of `joined` under each of `tables` ((table, bits, base) of `pack`
    and `Fitted.base`); `grams` = ngram.grams(joined, >= max_order)."""
    n_texts = int(joined.separators_before[-1]) + 1
    keep = _predicted(joined)
    owner = joined.separators_before[: len(joined.points)][keep]
    orders = min(max_order, len(grams))  # a short batch has no long windows
    keys = [table.Keys(mixed) for mixed, _ in grams[:orders]]
    out = np.zeros((n_texts, len(tables)))
    for column, (slots, bits, base) in enumerate(tables):
        found, log_p, backoff = table.read(slots, bits, keys[0])
        score = np.where(found, log_p, np.float32(base + LOG_UNIFORM))  # (n,) by the position of the predicted character
        for order in range(2, orders + 1):
            # The window starting at i predicts i + order - 1, after the context one order down starting at i (its
            # backoff read with it: 0 where never a context). A window holding a separator is never found, nor is
            # its context, so it leaves the lower order's score as it is: no mask is needed.
            context_backoff = backoff[: len(keys[order - 1])]
            found, log_p, backoff = table.read(slots, bits, keys[order - 1])
            lower = score[order - 1 : order - 1 + len(found)]  # a view
            lower += context_backoff
            np.copyto(lower, log_p, where=found)
        out[:, column] = np.bincount(owner, weights=score[keep], minlength=n_texts)
    return out
