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
SEPARATOR = 0  # between texts in the joined array: no n-gram may cross it
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

    def __init__(self, texts: Sequence[str], points: np.ndarray | None = None):
        if points is None:
            joined = "\x00".join(normalise(t) for t in texts)
            points = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        self.points = points
        self.separators_before = np.concatenate(([0], np.cumsum(self.points == SEPARATOR)))

    def subset(self, members: np.ndarray) -> Joined:
        """The batch of texts `members` (sorted indices) alone, cut from this one (nothing normalised again)."""
        chosen = np.zeros(int(self.separators_before[-1]) + 1, dtype=bool)
        chosen[members] = True
        points = self.points[chosen[self.separators_before[: len(self.points)]]]  # a separator goes with the text before it
        return Joined((), points[:-1] if len(points) and points[-1] == SEPARATOR else points)


def _joined(texts: Sequence[str] | Joined) -> tuple[np.ndarray, np.ndarray]:
    found = texts if isinstance(texts, Joined) else Joined(texts)
    return found.points, found.separators_before


def grams(texts: Sequence[str] | Joined, max_order: int = MAX_ORDER) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per order 1..max_order: (hash, valid) of the window starting at each point, uint64 and bool, aligned by
    start: the window [i, i+order) of the joined points, hashed with its order mixed in (top bits spread),
    valid when it holds no separator. What `features` buckets and `charlm` looks up."""
    points, separators_before = _joined(texts)
    found = []
    for order in range(1, max_order + 1):
        count = len(points) - order + 1
        if count <= 0:
            break
        h = np.full(count, np.uint64(order), dtype=np.uint64)
        for k in range(order):
            h = (h ^ points[k : k + count]) * _MULTIPLIER
        found.append((h * _MIX, separators_before[order : order + count] == separators_before[:count]))
    return found


def features(texts: Sequence[str] | Joined, bits: int = DEFAULT_BITS, max_order: int = MAX_ORDER,
             found: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(buckets, owner): each n-gram's bucket (int64) and the index of the text it comes from, sorted
    by owner. A text without letters normalises to its two pad spaces, whose pair is its one n-gram (the
    trained model has it: word lists hold numbers). `max_order` 1: characters only. `found`: `grams` of
    the same texts, when the caller has them.
    """
    points, separators_before = _joined(texts)
    buckets, owners = [], []
    shift = np.uint64(64 - bits)
    for order, (mixed, valid) in enumerate((found or grams(texts, max_order))[:max_order], start=1):
        if order == 1:
            valid = valid & (points[: len(mixed)] != _SPACE)
        buckets.append((mixed[valid] >> shift).astype(np.int64))
        owners.append(separators_before[: len(mixed)][valid])
    bucket = np.concatenate(buckets) if buckets else np.zeros(0, np.int64)
    owner = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    order = np.argsort(owner, kind="stable")
    return bucket[order], owner[order]


def _splitmix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: every bit of the input moves about half the bits of the output."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def word_keys(texts: Sequence[str] | Joined) -> tuple[np.ndarray, np.ndarray]:
    """(keys, owner) of every word (maximal run of letters and marks of the normalised text), sorted by owner:
    a uint64, the sum of a strong hash of each (character, position in the word). Runs of scripts written
    without spaces are left out (below). (Model v4 summed a weak one, x * prime for x = the character XOR a
    constant: "dica", "rico", "haga" and "that" had one key, since the sum of such terms is about the sum of
    the characters.)

    >>> a, _ = word_keys(["Nome do usuário"]); b, _ = word_keys(["usuário nome"])
    >>> sorted(a.tolist()) == sorted(b.tolist() + word_keys(["do"])[0].tolist())
    True
    >>> len(set(word_keys(["dica rico haga that vago mozo"])[0].tolist()))
    6
    """
    points, separators_before = _joined(texts)
    inside = (points != _SPACE) & (points != SEPARATOR)
    if not inside.any():
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    starts = inside & ~np.concatenate(([False], inside[:-1]))
    positions = np.flatnonzero(inside)
    word_of = np.cumsum(starts)[positions] - 1  # which word each letter belongs to
    first = np.flatnonzero(starts)
    offset = (positions - first[word_of]).astype(np.uint64)
    mixed = _splitmix(points[positions] + (offset << np.uint64(32)) + _MIX)
    hashed = np.add.reduceat(mixed, np.flatnonzero(np.diff(np.concatenate(([-1], word_of)))))
    keep = ~_dense(points[first])
    return _splitmix(hashed[keep]), separators_before[first][keep]


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
    counts = np.bincount(owner, minlength=n_texts)
    present = counts > 0
    # reduceat sums values[:, s_i:s_(i+1)]; only texts with n-grams start a run (starts strictly increase).
    # Integers (the int16 tables) sum exactly: in int32 (faster by a third) where no text's sum can leave it.
    exact = np.float32
    if values.dtype.kind in "iu":
        info = np.iinfo(values.dtype)
        exact = np.int32 if int(counts.max()) * max(-int(info.min), int(info.max)) < 2**31 else np.int64
    totals[present] = np.add.reduceat(values, starts[present], axis=1, dtype=exact).T
    return totals


def counts_per_text(owner: np.ndarray, n_texts: int) -> np.ndarray:
    """How many n-grams each text has."""
    return np.bincount(owner, minlength=n_texts)
