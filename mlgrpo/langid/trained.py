"""mlgrpo's own language model: character n-grams and words, trained on text that ships in packages.

Why: fastText's lite model and lingua alone miss short UI strings and names in some languages (fastText
lite gives the Swahili "mia tatu na themanini na nne" to English), and lingua takes seconds to load.
This model is trained once, at first use, on `mlgrpo.langid.corpus` (the train split only) and cached
(`$MLGRPO_CACHE/models/langid-ngram-v<VERSION>`, about 0.35 GB; NumPy arrays, nothing unpickled):

    chars  (L, 2**CHAR_BITS)  log P(n-gram bucket | language) (int16, `table.fixed`): multinomial naive Bayes over hashed
                              character 1-5-grams, additive smoothing ALPHA, from the corpus and from
                              wordfreq's word lists weighted by frequency (WORDFREQ_WEIGHT pseudo-counts)
    words  (one `table` per language)  log(f(word | language) + EPS) - log(EPS) > 0: evidence a word gives,
                              f mixing wordfreq's frequencies and the corpus's own word counts half and half;
                              a word not stored gives none (model v4 hashed words weakly into bare buckets:
                              "dica", "rico", "haga" and "that" shared one, so Portuguese "dica" read
                              6.1 nats of Spanish evidence)
    lm     (one `table` per language)  its character language model (`charlm`: Witten-Bell over 1-5-grams),
                              from the corpus's texts and wordfreq's words (LM_WORDFREQ_WEIGHT pseudo-counts
                              in all)
model.json holds where each language's tables lie in words.npy and lm.npy.

`Scorer.log_scores(texts, candidates)` -> (N, K) sum over n-grams / CHAR_TEMPERATURE + sum over words +
log P(text | language) of the language model. The two character models err differently (naive Bayes counts
one fact once per n-gram that holds it; the Markov model reads each character once but is vaguer on what
it never saw), and their sum is right more often than either (`python -m bench.bench_langid --tune`, best of
27 languages on the tune sample's UI strings and words: naive Bayes / 3 + words 0.967, the language model +
words 0.973, all three with naive Bayes / 6: 0.975, / 3: 0.973, / 12: 0.975).
The backends in `combined` add fastText and turn scores into calibrated probabilities.
Knows nothing about scripts, screening, thresholds or the CLI.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mlgrpo.langid import charlm, ngram, table

VERSION = 5
CHAR_BITS = 19
ALPHA = 0.01
WORDFREQ_WEIGHT = 1e5
NAMES_WEIGHT = 0.2  # corpus.NAME_SOURCES count this much (tuned on the tune split)
EPS = 1e-6
CHAR_TEMPERATURE = 6.0  # naive Bayes' share beside the language model (module docstring; 3.0 in model v4, alone)
# The language model reads each text for its LM_TOP likeliest candidates by naive Bayes and words only, the others
# trailing already, and not at all where the best leads the next by LM_MARGIN nats (calibrated by the default's
# temperature, 5.9: 160 to 1, against the 2.5 to 1 the consistency judge tests). `bench_langid --tune` prints the
# best guesses' accuracy each way; `mlgrpo langid` on its 10,000 lines (callgrind, instructions): every candidate
# 7.30 G, LM_TOP 6.60 G, and LM_MARGIN 6.26 G (model v4, no language model: 6.15 G);
# `bench_consistency` on every text of both splits: the same verdicts with and without LM_MARGIN.
LM_TOP = 3
LM_MARGIN = 30.0
LM_WORDFREQ_WEIGHT = 1e5  # wordfreq's list counts as this many words in the language model (its texts: 1 each)
INFO = "model.json"


def model_dir() -> Path:
    from mlgrpo.runtime import cache_dir

    return cache_dir("models") / f"langid-ngram-v{VERSION}"


def _settings() -> dict:
    """What the model was built with; a cached model built otherwise is rebuilt (installing the optional gsm
    package adds a source)."""
    from mlgrpo.langid.corpus import gsm_available

    return {"version": VERSION, "char_bits": CHAR_BITS, "alpha": ALPHA,
            "wordfreq_weight": WORDFREQ_WEIGHT, "eps": EPS, "names_weight": NAMES_WEIGHT, "gsm": gsm_available(),
            "lm_wordfreq_weight": LM_WORDFREQ_WEIGHT, "lm_alphabet": charlm.ALPHABET, "scale": table.SCALE}


class Scorer:
    """The cached model, memory-mapped: scores texts against candidate languages."""

    def __init__(self, folder: Path):
        info = json.loads((folder / INFO).read_text(encoding="utf-8"))
        self.languages: tuple[str, ...] = tuple(info["languages"])
        self.info = info
        self._index = {code: i for i, code in enumerate(self.languages)}
        # memory-mapped (pages are read as rows are used), as plain arrays: indexing a np.memmap costs a Python call
        self._chars = np.asarray(np.load(folder / "chars.npy", mmap_mode="r"))
        self._words = _tables(np.asarray(np.load(folder / "words.npy", mmap_mode="r")), info["words"])
        self._lm = _tables(np.asarray(np.load(folder / "lm.npy", mmap_mode="r")), info["lm"])

    def known(self, candidates) -> list[str]:
        return [c for c in candidates if c in self._index]

    def warm(self, candidates) -> None:
        """Read the candidates' rows once, so that the first texts scored do not wait for the disk."""
        for code in self.known(candidates):
            for table in (self._chars[self._index[code]], self._words[code][0], self._lm[code][0]):
                float(table[::512].sum())  # one value in every 1-4 KB: every page

    def log_scores(self, texts: Sequence[str], candidates: Sequence[str], max_order: int = ngram.MAX_ORDER,
                   with_words: bool = True, with_lm: bool = True, lm_top: int = LM_TOP,
                   lm_margin: float = LM_MARGIN) -> np.ndarray:
        """(N, K) float64 scores of each text for each candidate the model knows (others: KeyError).

        `max_order` below MAX_ORDER, no words and no language model: for Han text between Chinese and
        Japanese, both write "三百九十六" alike, and 3-5-grams and words only echo which language's training
        text happened to hold more numbers; characters and their pairs still tell 删除 (Chinese) from 削除,
        and 名前 from 名字."""
        rows = [self._index[c] for c in candidates]
        n = len(texts)
        joined = ngram.Joined(texts)
        windows = ngram.grams(joined, max_order)
        buckets, owner = ngram.features(joined, CHAR_BITS, max_order=max_order, found=windows)
        total = ngram.sums_per_text(_gather(self._chars, rows, buckets), owner, n) / (table.SCALE * CHAR_TEMPERATURE)
        keys, owner = ngram.word_keys(joined) if with_words else ((), None)
        if len(keys):
            keys = table.Keys(keys)
            evidence = np.stack([np.where(found, value, 0) for found, value, _ in
                                 (table.read(*self._words[c][:2], keys) for c in candidates)])
            total += ngram.sums_per_text(evidence, owner, n)
        if with_lm and n:
            total += self._markov(candidates, total, joined, windows, max_order, lm_top, lm_margin)
        return total

    def _markov(self, candidates, before: np.ndarray, joined, windows, max_order: int, lm_top: int,
                lm_margin: float) -> np.ndarray:
        """(N, K) the language model's log-likelihoods, computed for each text's `lm_top` likeliest candidates by
        `before`; the others get the least of those (they trail already, and stay behind). A text whose best
        candidate leads by `lm_margin` or more is read by none (all zero: its ranking and the ratios the
        consistency judge tests are settled)."""
        n, k = before.shape
        top = np.argsort(-before, axis=1, kind="stable")[:, :lm_top]
        if k > 1:
            ranked = np.take_along_axis(before, top[:, :2], axis=1)
            top[ranked[:, 0] - ranked[:, 1] >= lm_margin] = -1  # clear already: read by no language model
        markov = np.full((n, k), np.nan)
        for column, code in enumerate(candidates):
            members = np.flatnonzero((top == column).any(axis=1))
            if len(members) == n:  # every text: the batch as it is
                markov[:, column] = charlm.log_likelihoods(joined, windows, [self._lm[code]], max_order)[:, 0]
            elif len(members):
                subset = joined.subset(members)
                markov[members, column] = charlm.log_likelihoods(subset, ngram.grams(subset, max_order), [self._lm[code]], max_order)[:, 0]
        unread = np.isnan(markov)
        least = np.nanmin(np.where(unread.all(axis=1, keepdims=True), 0.0, markov), axis=1, keepdims=True)
        return np.where(unread, least, markov)


def _tables(flat: np.ndarray, layout: dict) -> dict[str, tuple[np.ndarray, int, float]]:
    """Each language's (table, bits, base) from the concatenated tables and model.json's (offset, bits, base)."""
    return {code: (flat[offset : offset + (1 << bits)], bits, base) for code, (offset, bits, base) in layout.items()}


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
    sizes, tables, layouts = {}, {"words": [], "lm": []}, {"words": {}, "lm": {}}

    def add(kind: str, language: str, slots: np.ndarray, bits: int, base: float = 0.0) -> None:
        layouts[kind][language] = (sum(len(t) for t in tables[kind]), bits, base)
        tables[kind].append(slots)

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
        add("words", language, *_word_table(frequencies))
        chars[i] = np.log(counts + ALPHA) - np.log(counts.sum() + ALPHA * counts.size)
        listed = _listed_words(corpus.word_frequencies(language))
        lm = charlm.fit(texts + list(listed), np.concatenate([weight_of, LM_WORDFREQ_WEIGHT * np.array(list(listed.values()))]))
        add("lm", language, *charlm.pack(lm), lm.base)
        sizes[language] = len(texts)
        if (i + 1) % 25 == 0:
            _progress(f"  {i + 1}/{len(languages)} languages ({time.perf_counter() - start:.0f} s)")
    info = {"languages": languages, "settings": _settings(), "train_texts": sizes, **layouts,
            "seconds": round(time.perf_counter() - start, 1)}
    _publish(folder, {"chars.npy": table.fixed(chars), "words.npy": np.concatenate(tables["words"]),
                      "lm.npy": np.concatenate(tables["lm"])}, info)
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


def _word_table(frequencies: dict[str, float]) -> tuple[np.ndarray, int]:
    """The words' evidence, log(f + EPS) - log(EPS), in a `table` (the most frequent placed first)."""
    keys, owner = ngram.word_keys(list(frequencies))
    unique, inverse = np.unique(keys, return_inverse=True)
    mass = np.bincount(inverse, weights=np.array(list(frequencies.values()))[owner])
    evidence = np.log(mass + EPS) - np.log(EPS)
    return table.pack(unique, evidence, np.zeros(len(unique)), -mass)


def _listed_words(listed: dict[str, float]) -> dict[str, float]:
    """wordfreq's list as normalised words and their shares of the list (they sum to 1): the language model's
    word list (the corpus's own words it reads in the texts themselves)."""
    norm = sum(listed.values()) or 1.0
    found: dict[str, float] = {}
    for word, f in listed.items():
        for part in ngram.normalise(word).split():
            found[part] = found.get(part, 0.0) + f / norm
    return found


def _publish(folder: Path, arrays: dict[str, np.ndarray], info: dict) -> None:
    """Write into a temporary folder beside `folder`, then rename it into place (a crash leaves no half model).
    Of two concurrent builds, whichever renames first wins: a later one that finds a complete model in place
    (its rename refused: the folder is not empty) keeps that equal model and drops its own."""
    import shutil  # local, as tempfile: ~8 ms of imports that only a build needs (`mlgrpo langid` starts without them)
    import tempfile

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
        try:
            os.replace(tmp, folder)
        except OSError as exc:  # another build put its model there between the check above and this rename
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not (folder / INFO).exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
