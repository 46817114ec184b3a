"""plan_compute_batches: sort by length, cut by sentences and by a token
budget."""

import numpy as np
import pytest

from bilm_keras.embedding.compute_batches import plan_compute_batches


def test_sorted_by_length_then_cut():
    lengths = [5, 0, 3, 3, 9, 1, 3]
    batches = plan_compute_batches(lengths, max_sentences=3)
    # stable: the three sentences of length 3 keep their input order
    assert [b.tolist() for b in batches] == [[1, 5, 2], [3, 6, 0], [4]]
    assert all(b.dtype == np.int64 for b in batches)


@pytest.mark.parametrize("n,size", [(0, 4), (1, 4), (8, 4), (9, 4), (7, 1)])
def test_every_index_exactly_once(n, size):
    lengths = np.random.default_rng(n).integers(0, 20, n).tolist()
    batches = plan_compute_batches(lengths, max_sentences=size)
    joined = np.concatenate(batches) if batches else np.zeros(0, np.int64)
    assert sorted(joined.tolist()) == list(range(n))
    assert all(1 <= len(b) <= size for b in batches)
    assert [lengths[i] for i in joined] == sorted(lengths)


def test_token_budget():
    # sorted: 0 1 1 2 3 3 5 9 (indices 1 5 7 2 3 6 0 4); a batch's
    # positions are its rows times its longest length + 2
    lengths = [5, 0, 2, 3, 9, 1, 3, 1]
    batches = plan_compute_batches(lengths, max_sentences=8, max_tokens=12)
    assert [b.tolist() for b in batches] == [
        [1, 5, 7],  # 3 x (1 + 2) = 9; with the 2: 4 x 4 = 16 > 12
        [2, 3],  # 2 x 5 = 10
        [6],  # with the 5: 2 x 7 = 14 > 12
        [0],  # 7 alone
        [4],  # 11 alone
    ]
    # the sentence cap still holds within the budget
    batches = plan_compute_batches(lengths, max_sentences=2, max_tokens=100)
    assert [len(b) for b in batches] == [2, 2, 2, 2]


def test_longer_than_the_budget_gets_its_own_batch():
    batches = plan_compute_batches([1, 50, 1], max_sentences=4, max_tokens=9)
    assert [b.tolist() for b in batches] == [[0, 2], [1]]


@pytest.mark.parametrize("n,tokens", [(1, 1), (30, 1), (30, 40), (30, 10**6)])
def test_budget_every_index_exactly_once(n, tokens):
    lengths = np.random.default_rng(n).integers(0, 20, n).tolist()
    batches = plan_compute_batches(lengths, max_sentences=7, max_tokens=tokens)
    joined = np.concatenate(batches)
    assert sorted(joined.tolist()) == list(range(n))
    assert [lengths[i] for i in joined] == sorted(lengths)
    for b in batches:
        assert 1 <= len(b) <= 7
        width = max(lengths[i] for i in b) + 2
        assert len(b) == 1 or len(b) * width <= tokens


@pytest.mark.parametrize("kwargs,match", [
    (dict(max_sentences=0), r"max_sentences: expected an integer >= 1, "
                            r"found 0"),
    (dict(max_sentences=True), r"max_sentences: .* found True"),
    (dict(max_sentences=2, max_tokens=0), r"max_tokens: expected an integer >= "
                                          r"1 or None, found 0"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plan_compute_batches([1, 2], **kwargs)
