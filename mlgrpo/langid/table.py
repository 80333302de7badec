"""A hashed table of 64-bit keys with fingerprints, two small numbers per key, read in one NumPy pass.

Why fingerprints: a table that only buckets keys answers for a key it never stored whatever another key
left in its bucket. The word evidence of model v4 did: "dica" (Portuguese) read 6.1 nats of Spanish
evidence, a frequent Spanish word's, from the bucket they shared. Here a key that is not stored reads as
not found.

Layout: 2**bits slots of one uint64, fingerprint (the key's low 32 bits, never 0) | high | low, the two
values as int16 in units of 1/SCALE (log-probabilities to 0.001 nats, down to -32.7; float16 spent 4% of
`mlgrpo langid`'s instructions converting to float, one value at a time); 0 is an empty slot. A key may take either slot of one pair (its top bits - 1 bits; one cache
line): slots go to keys in order of priority, so a full pair drops the least important key (it then reads
as not found). With at least twice as many slots as keys, a few percent of keys are dropped.
Pure functions; knows nothing about languages or n-grams.
"""

from __future__ import annotations

import math

import numpy as np

_LOW32 = np.uint64(0xFFFFFFFF)
SCALE = 1000.0  # a stored value is round(value * SCALE), clipped to int16


def table_bits(size: int) -> int:
    """Slots (as a power of two) for `size` keys: at least twice as many, at least 2**8."""
    return max(8, math.ceil(math.log2(2 * max(size, 1))))


def _fingerprint(keys: np.ndarray) -> np.ndarray:
    return ((keys & _LOW32) | np.uint64(1)).astype(np.uint32)  # never 0, which marks an empty slot


def fixed(values: np.ndarray) -> np.ndarray:
    """`values` as int16 in units of 1/SCALE, clipped to int16's range."""
    return np.clip(np.rint(np.asarray(values, dtype=np.float64) * SCALE), -32768, 32767).astype(np.int16)


def _pair(keys: np.ndarray, bits: int) -> np.ndarray:
    return (keys >> np.uint64(65 - bits)).astype(np.int64)


def pack(keys: np.ndarray, high: np.ndarray, low: np.ndarray, priority: np.ndarray, bits: int | None = None) -> tuple[np.ndarray, int]:
    """A table of 2**bits slots (`table_bits(len(keys))` by default) holding (high, low) for each key (distinct
    uint64), the keys with the smallest `priority` placed first; and its bits.

    >>> table, bits = pack(np.array([5 << 40, 7], dtype=np.uint64), np.array([-1.5, -2.0]), np.zeros(2), np.arange(2))
    >>> found, high, low = read(table, bits, np.array([7, 5 << 40, 9], dtype=np.uint64))
    >>> found.tolist(), [round(h, 3) for h in high.tolist()]
    ([True, True, False], [-2.0, -1.5, 0.0])
    """
    bits = bits or table_bits(len(keys))
    first_served = np.argsort(priority, kind="stable")
    keys = keys[first_served]
    pair = _pair(keys, bits)
    order = np.argsort(pair, kind="stable")  # grouped by pair, in priority order within each
    grouped = pair[order]
    starts = np.flatnonzero(np.diff(np.concatenate(([-1], grouped))))
    rank = np.arange(len(grouped)) - np.repeat(starts, np.diff(np.concatenate((starts, [len(grouped)]))))
    kept, slot = order[rank < 2], rank[rank < 2]
    halves = fixed(np.stack([low[first_served][kept], high[first_served][kept]], axis=1))
    values = halves.view(np.uint32).astype(np.uint64).ravel()  # little-endian: low in the low 16 bits
    table = np.zeros(1 << bits, dtype=np.uint64)
    table[2 * pair[kept] + slot] = (_fingerprint(keys[kept]).astype(np.uint64) << np.uint64(32)) | values
    return table, bits


class Keys:
    """Keys to read from several tables: what every table's read shares is computed once (the fingerprints;
    the pairs, once per size of table)."""

    def __init__(self, keys: np.ndarray):
        self.keys = keys
        self.fingerprints = _fingerprint(keys)
        self._pairs: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def pairs(self, bits: int) -> np.ndarray:
        if bits not in self._pairs:
            self._pairs[bits] = _pair(self.keys, bits)
        return self._pairs[bits]


def read(table: np.ndarray, bits: int, keys: np.ndarray | Keys) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(found, high, low) of each key, float32; a key neither slot of its pair holds (by its fingerprint) reads
    (False, 0, 0). `table` should be a plain ndarray (a np.memmap's indexing costs a Python call per read: view
    it with np.asarray)."""
    keys = keys if isinstance(keys, Keys) else Keys(keys)
    words = np.take(table.reshape(-1, 2), keys.pairs(bits), axis=0).view(np.uint32)  # (n, 4): value, fingerprint x 2
    first = words[:, 1] == keys.fingerprints
    found = first | (words[:, 3] == keys.fingerprints)
    value = np.where(first, words[:, 0], words[:, 2])
    value *= found
    halves = value.view(np.int16).reshape(-1, 2)
    return found, halves[:, 1] * np.float32(1 / SCALE), halves[:, 0] * np.float32(1 / SCALE)


def stored(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Whether each key's fingerprint is anywhere in `table` (for tests of what packing dropped)."""
    return np.isin(_fingerprint(keys), (table[table != 0] >> np.uint64(32)).astype(np.uint32))
