"""plan_compute_batches: today's policy, sort by length and cut."""

import numpy as np
import pytest

from bilm_keras.models.compute_batches import plan_compute_batches


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


@pytest.mark.parametrize("kwargs,match", [
    (dict(max_sentences=0), r"max_sentences: expected a positive integer, "
                            r"found 0"),
    (dict(max_sentences=True), r"max_sentences: .* found True"),
    (dict(max_sentences=2, max_tokens=100), r"max_tokens: expected None"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plan_compute_batches([1, 2], **kwargs)
