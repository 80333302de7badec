"""The n-gram features: counted by hand, independent of the batch, and one normalised batch serving both kinds."""

from __future__ import annotations

import numpy as np

from mlgrpo.langid import ngram


def test_a_text_has_every_ngram_of_orders_one_to_five_but_the_lone_space():
    # " ab " (4 characters): orders 1-5 give 4, 3, 2, 1, 0 windows; the two lone spaces are dropped: 2+3+2+1 = 8.
    buckets, owner = ngram.features(["ab"], bits=19)
    assert len(buckets) == 8 and owner.tolist() == [0] * 8
    assert ngram.word_keys(["ab cd"])[1].tolist() == [0, 0]


def test_features_do_not_cross_texts_and_do_not_depend_on_the_batch():
    alone = [ngram.features([t], bits=19)[0] for t in ("Nome do usuário", "Имя", "")]
    together, owner = ngram.features(["Nome do usuário", "Имя", ""], bits=19)
    assert [sorted(together[owner == i].tolist()) for i in range(3)] == [sorted(a.tolist()) for a in alone]
    assert (owner == 2).sum() == 1  # a text without letters: only its two pad spaces' pair


def test_one_joined_batch_gives_what_the_texts_give():
    texts = ["Nome do usuário", "GIMP 笔刷管道", "Имя пользователя", "12"]
    joined = ngram.Joined(texts)
    for a, b in ((ngram.features(joined, 19), ngram.features(texts, 19)), (ngram.word_keys(joined), ngram.word_keys(texts))):
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_every_word_of_a_real_word_list_has_its_own_key():
    from mlgrpo.langid import corpus

    listed = sorted({w for word in corpus.word_frequencies("es") for w in ngram.normalise(word).split()})
    keys, owner = ngram.word_keys(listed)  # a word of kana ("ツ") has no key: scripts without spaces have none
    assert len(listed) > 20_000 and len(set(keys.tolist())) == len(keys) == len(set(owner.tolist())) >= len(listed) - 5


def test_a_subset_of_a_joined_batch_is_the_batch_of_those_texts():
    texts = ["Nome do usuário", "", "Имя", "GIMP 笔刷管道", "12"]
    joined = ngram.Joined(texts)
    for members in ([0], [1, 3], [0, 2, 4], [4]):
        cut, fresh = joined.subset(np.array(members)), ngram.Joined([texts[i] for i in members])
        assert np.array_equal(cut.points, fresh.points) and np.array_equal(cut.separators_before, fresh.separators_before)


def test_sums_of_integer_values_are_exact_however_many_a_text_has():
    # int16 values sum in int32 while no text's sum can leave it, else in int64: 70,000 values of -32,768 in one
    # text sum to -2,293,760,000, beyond int32.
    values = np.concatenate([np.full(70_000, -32768, dtype=np.int16), np.array([5, -7], dtype=np.int16)])[None, :]
    owner = np.array([0] * 70_000 + [2, 2])
    assert ngram.sums_per_text(values, owner, 3).ravel().tolist() == [-2_293_760_000, 0, -2]
    assert ngram.sums_per_text(values[:, -2:], owner[-2:], 3).ravel().tolist() == [0, 0, -2]
