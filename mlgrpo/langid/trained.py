"""mlgrpo's own language model: character n-grams and words, trained on text that ships in packages.

Why: fastText's lite model and lingua alone miss short UI strings and names in some languages (fastText
lite gives the Swahili "mia tatu na themanini na nne" to English), and lingua takes seconds to load.
This model is trained once, at first use, on `mlgrpo.langid.corpus` (the train split only) and cached
(`$MLGRPO_CACHE/models/langid-ngram-v<VERSION>`, about 0.3 GB; NumPy arrays, nothing unpickled):

    chars  (L, 2**CHAR_BITS)  log P(n-gram bucket | language): multinomial naive Bayes over hashed
                              character 1-5-grams, additive smoothing ALPHA, from the corpus and from
                              wordfreq's word lists weighted by frequency (WORDFREQ_WEIGHT pseudo-counts)
    words  (L, 2**WORD_BITS)  log(f(word | language) + EPS) - log(EPS) >= 0: evidence a word gives, f mixing
                              wordfreq's frequencies and the corpus's own word counts half and half

`Scorer.log_scores(texts, candidates)` -> (N, K) sum over n-grams / CHAR_TEMPERATURE + sum over words;
the backends in `combined` add fastText and turn scores into calibrated probabilities.
Knows nothing about scripts, screening, thresholds or the CLI.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mlgrpo.langid import ngram

VERSION = 4
CHAR_BITS = 19
WORD_BITS = 19
ALPHA = 0.01
WORDFREQ_WEIGHT = 1e5
NAMES_WEIGHT = 0.2  # corpus.NAME_SOURCES count this much (tuned on the tune split)
EPS = 1e-6
CHAR_TEMPERATURE = 3.0
INFO = "model.json"


def model_dir() -> Path:
    from mlgrpo.runtime import cache_dir

    return cache_dir("models") / f"langid-ngram-v{VERSION}"


def _settings() -> dict:
    """What the model was built with; a cached model built otherwise is rebuilt (installing the optional gsm
    package adds a source)."""
    from mlgrpo.langid.corpus import gsm_available

    return {"version": VERSION, "char_bits": CHAR_BITS, "word_bits": WORD_BITS, "alpha": ALPHA,
            "wordfreq_weight": WORDFREQ_WEIGHT, "eps": EPS, "names_weight": NAMES_WEIGHT, "gsm": gsm_available()}


class Scorer:
    """The cached model, memory-mapped: scores texts against candidate languages."""

    def __init__(self, folder: Path):
        info = json.loads((folder / INFO).read_text(encoding="utf-8"))
        self.languages: tuple[str, ...] = tuple(info["languages"])
        self.info = info
        self._index = {code: i for i, code in enumerate(self.languages)}
        self._chars = np.load(folder / "chars.npy", mmap_mode="r")
        self._words = np.load(folder / "words.npy", mmap_mode="r")

    def known(self, candidates) -> list[str]:
        return [c for c in candidates if c in self._index]

    def warm(self, candidates) -> None:
        """Read the candidates' rows once, so that the first texts scored do not wait for the disk."""
        for row in (self._index[c] for c in self.known(candidates)):
            for table in (self._chars, self._words):
                float(table[row, ::1024].sum())  # one value in every 2 KB: every page

    def log_scores(self, texts: Sequence[str], candidates: Sequence[str], max_order: int = ngram.MAX_ORDER,
                   with_words: bool = True) -> np.ndarray:
        """(N, K) float64 scores of each text for each candidate the model knows (others: KeyError).

        `max_order` below MAX_ORDER and no words: for Han text between Chinese and Japanese, both write
        "三百九十六" alike, and 3-5-grams and words only echo which language's training text happened to hold
        more numbers; characters and their pairs still tell 删除 (Chinese) from 削除, and 名前 from 名字."""
        rows = [self._index[c] for c in candidates]
        n = len(texts)
        joined = ngram.Joined(texts)
        buckets, owner = ngram.features(joined, CHAR_BITS, max_order=max_order)
        total = ngram.sums_per_text(_gather(self._chars, rows, buckets), owner, n) / CHAR_TEMPERATURE
        buckets, owner = ngram.words(joined, WORD_BITS) if with_words else ((), None)
        if len(buckets):
            total += ngram.sums_per_text(_gather(self._words, rows, buckets), owner, n)
        return total


def _gather(table: np.ndarray, rows: list[int], buckets: np.ndarray) -> np.ndarray:
    """table[rows][:, buckets], (len(rows), len(buckets)), read straight from the memory map: no row is copied
    (a copy of 27 languages' rows is 54 MB to allocate and fault in, most of `mlgrpo langid`'s time on 10,000
    lines when it was made once per candidate set), and only the candidates' rows are touched."""
    out = np.empty((len(rows), len(buckets)), dtype=table.dtype)
    for i, row in enumerate(rows):
        np.take(table[row], buckets, out=out[i])
    return out


@functools.cache
def scorer() -> Scorer:
    """The cached model, built first if needed (once per machine, about a minute)."""
    folder = model_dir()
    info_path = folder / INFO
    try:
        ready = json.loads(info_path.read_text(encoding="utf-8")).get("settings") == _settings()
    except (OSError, ValueError):
        ready = False
    if not ready:
        build(folder)
    return Scorer(folder)


def _progress(message: str) -> None:
    print(f"mlgrpo: {message}", file=sys.stderr, flush=True)


def build(folder: Path) -> Path:
    """Train the model on the corpus's train split and publish it at `folder` atomically."""
    from mlgrpo.langid import corpus

    start = time.perf_counter()
    languages = tuple(sorted(corpus.corpus_languages()))
    _progress(f"building the language-ID model from package data in {len(languages)} languages "
              f"(once; cached in {folder})")
    chars = np.zeros((len(languages), 1 << CHAR_BITS), dtype=np.float32)
    words = np.zeros((len(languages), 1 << WORD_BITS), dtype=np.float32)
    sizes = {}
    for i, language in enumerate(languages):
        by_source = corpus.texts(language, "train")
        texts = [t for source in by_source.values() for t in source]
        weight_of = np.array([NAMES_WEIGHT if source in corpus.NAME_SOURCES else 1.0
                              for source, found in by_source.items() for _ in found])
        buckets, owner = ngram.features(texts, CHAR_BITS)
        counts = np.bincount(buckets, weights=weight_of[owner], minlength=1 << CHAR_BITS)
        frequencies = _word_mixture(texts, weight_of, corpus.word_frequencies(language))
        if frequencies:
            listed = list(frequencies)
            weight = np.array([frequencies[w] for w in listed])
            buckets, owner = ngram.features(listed, CHAR_BITS)
            counts += WORDFREQ_WEIGHT * np.bincount(buckets, weights=weight[owner], minlength=1 << CHAR_BITS)
            buckets, owner = ngram.words(listed, WORD_BITS)
            mass = np.bincount(buckets, weights=weight[owner], minlength=1 << WORD_BITS)
            words[i] = np.log(mass + EPS) - np.log(EPS)
        chars[i] = np.log(counts + ALPHA) - np.log(counts.sum() + ALPHA * counts.size)
        sizes[language] = len(texts)
        if (i + 1) % 25 == 0:
            _progress(f"  {i + 1}/{len(languages)} languages ({time.perf_counter() - start:.0f} s)")
    info = {"languages": languages, "settings": _settings(), "train_texts": sizes,
            "seconds": round(time.perf_counter() - start, 1)}
    _publish(folder, {"chars.npy": chars.astype(np.float16), "words.npy": words.astype(np.float16)}, info)
    _progress(f"language-ID model ready ({info['seconds']} s)")
    return folder


def _word_mixture(texts: list[str], weights: np.ndarray, listed: dict[str, float]) -> dict[str, float]:
    """Word frequencies: half wordfreq's list (when the language has one), half the corpus's words (each
    text's words counted with the text's weight)."""
    counts: Counter = Counter()
    for text, weight in zip(texts, weights.tolist()):
        for word in ngram.normalise(text).split():
            counts[word] += weight
    total = sum(counts.values()) or 1
    share = 0.5 if listed else 1.0
    mixed: dict[str, float] = {w: share * c / total for w, c in counts.items()}
    if listed:
        norm = sum(listed.values())
        for word, f in listed.items():
            for part in ngram.normalise(word).split():
                mixed[part] = mixed.get(part, 0.0) + 0.5 * f / norm
    return mixed


def _publish(folder: Path, arrays: dict[str, np.ndarray], info: dict) -> None:
    """Write into a temporary folder beside `folder`, then rename it into place (a crash leaves no half model;
    of two concurrent builds, the last rename wins with an equal model)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{folder.name}-", dir=folder.parent))
    try:
        for name, array in arrays.items():
            np.save(tmp / name, array, allow_pickle=False)
        (tmp / INFO).write_text(json.dumps(info, indent=1), encoding="utf-8")  # written last: marks it complete
        if folder.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".trash-{folder.name}-", dir=folder.parent))
            os.replace(folder, trash / folder.name)
            shutil.rmtree(trash, ignore_errors=True)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
