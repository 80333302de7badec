"""Character n-gram features of texts, hashed, computed for a whole batch at once in NumPy.

A text is case-folded, its characters other than letters and marks become spaces, runs of spaces
collapse, and it is padded with one space each side (" nome do usuário "). Its features are every
character n-gram of orders 1..MAX_ORDER (the lone space excepted), each hashed to one of 2**bits
buckets with its order mixed in. All texts of a batch are joined into one array of code points, so
the hashing is a few vectorised passes whatever the number of texts: this is what lets `mlgrpo langid`
identify 10,000 lines in well under a second. Pure functions; knows nothing about languages or models.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

MAX_ORDER = 5
DEFAULT_BITS = 20
_NOT_LETTER = re.compile(r"[\W\d_]+")
_SEPARATOR = 0  # between texts in the joined array: no n-gram may cross it
_SPACE = 32
_MULTIPLIER = np.uint64(0x100000001B3)  # FNV-1a's 64-bit prime
_MIX = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: spreads the hash over the top bits


def normalise(text: str) -> str:
    """The text as the features see it.

    >>> normalise("Nome do Usuário: 42!")
    ' nome do usuário '
    """
    return " " + " ".join(_NOT_LETTER.sub(" ", text.casefold()).split()) + " "


class Joined:
    """A batch of texts normalised and joined by separators, as code points, and separators_before[i]: the
    separators among points[:i] (the index of the text that points[i] belongs to). Made once for a batch,
    it serves both `features` and `words`."""

    def __init__(self, texts: Sequence[str]):
        joined = "\x00".join(normalise(t) for t in texts)
        self.points = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        self.separators_before = np.concatenate(([0], np.cumsum(self.points == _SEPARATOR)))


def _joined(texts: Sequence[str] | Joined) -> tuple[np.ndarray, np.ndarray]:
    found = texts if isinstance(texts, Joined) else Joined(texts)
    return found.points, found.separators_before


def features(texts: Sequence[str] | Joined, bits: int = DEFAULT_BITS, max_order: int = MAX_ORDER) -> tuple[np.ndarray, np.ndarray]:
    """(buckets, owner): each n-gram's bucket (int64) and the index of the text it comes from, sorted
    by owner. A text without letters normalises to its two pad spaces, whose pair is its one n-gram (the
    trained model has it: word lists hold numbers). `max_order` 1: characters only.
    """
    points, separators_before = _joined(texts)
    # A window [i, i+n) is valid when it holds no separator.
    buckets, owners = [], []
    shift = np.uint64(64 - bits)
    for order in range(1, max_order + 1):
        count = len(points) - order + 1
        if count <= 0:
            break
        h = np.full(count, np.uint64(order), dtype=np.uint64)
        for k in range(order):
            h = (h ^ points[k : k + count]) * _MULTIPLIER
        valid = separators_before[order : order + count] == separators_before[:count]
        if order == 1:
            valid &= points[:count] != _SPACE
        buckets.append(((h[valid] * _MIX) >> shift).astype(np.int64))
        owners.append(separators_before[:count][valid])
    bucket = np.concatenate(buckets) if buckets else np.zeros(0, np.int64)
    owner = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    order = np.argsort(owner, kind="stable")
    return bucket[order], owner[order]


def words(texts: Sequence[str] | Joined, bits: int = DEFAULT_BITS) -> tuple[np.ndarray, np.ndarray]:
    """(buckets, owner) of every word (maximal run of letters and marks of the normalised text), hashed
    from its characters and their positions; sorted by owner.

    >>> a, _ = words(["Nome do usuário"]); b, _ = words(["usuário nome"])
    >>> sorted(a.tolist()) == sorted(b.tolist() + words(["do"])[0].tolist())
    True
    """
    points, separators_before = _joined(texts)
    inside = (points != _SPACE) & (points != _SEPARATOR)
    if not inside.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = inside & ~np.concatenate(([False], inside[:-1]))
    positions = np.flatnonzero(inside)
    word_of = np.cumsum(starts)[positions] - 1  # which word each letter belongs to
    first = np.flatnonzero(starts)
    offset = (positions - first[word_of]).astype(np.uint64)
    mixed = ((points[positions] ^ (offset * _MIX)) * _MULTIPLIER) ^ (offset + np.uint64(1))
    hashed = np.add.reduceat(mixed * _MULTIPLIER, np.flatnonzero(np.diff(np.concatenate(([-1], word_of)))))
    shift = np.uint64(64 - bits)
    keep = ~_dense(points[first])
    return ((hashed[keep] * _MIX) >> shift).astype(np.int64), separators_before[first][keep]


# Scripts written without spaces: a run of their letters is a phrase, not a word, and whether a word
# list holds it says more about the list's tokenizer than about the language ("年月日" is a word in
# wordfreq's Japanese list, not in its Chinese one). Their runs get no word feature; n-grams judge them.
_DENSE_RANGES = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x3040, 0x30FF), (0x3400, 0x9FFF),
                 (0xF900, 0xFAFF), (0x20000, 0x3FFFF))


def _dense(points: np.ndarray) -> np.ndarray:
    found = np.zeros(points.shape, dtype=bool)
    for low, high in _DENSE_RANGES:
        found |= (points >= low) & (points <= high)
    return found


def sums_per_text(values: np.ndarray, owner: np.ndarray, n_texts: int) -> np.ndarray:
    """Column sums of `values` (K, M) grouped by `owner` (M,), sorted: (n_texts, K), zero for texts without any.

    >>> sums_per_text(np.array([[1.0, 2.0, 4.0]]), np.array([0, 0, 2]), 3).ravel().tolist()
    [3.0, 0.0, 4.0]
    """
    totals = np.zeros((n_texts, values.shape[0]), dtype=np.float64)
    if values.shape[1] == 0:
        return totals
    starts = np.searchsorted(owner, np.arange(n_texts), side="left")
    present = np.bincount(owner, minlength=n_texts) > 0
    # reduceat sums values[:, s_i:s_(i+1)]; only texts with n-grams start a run (starts strictly increase)
    totals[present] = np.add.reduceat(values.astype(np.float32, copy=False), starts[present], axis=1).T
    return totals


def counts_per_text(owner: np.ndarray, n_texts: int) -> np.ndarray:
    """How many n-grams each text has."""
    return np.bincount(owner, minlength=n_texts)
