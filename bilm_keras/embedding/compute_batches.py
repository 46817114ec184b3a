"""How the bulk embedder cuts a chunk of sentences into the batches its
LSTMs run. It is one pure function, so the policy lives in one place. The
device loop, on one device or several, only consumes its list."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bilm_keras._utils.settings import check_int


def plan_compute_batches(
    lengths: Sequence[int],
    *,
    max_sentences: int,
    max_tokens: int | None = None,
) -> list[np.ndarray]:
    """The compute batches of a chunk: index arrays into it.

    The sentences are sorted by length, stably, so equal lengths keep
    their input order. They are cut, shortest first, into batches of at
    most ``max_sentences`` sentences. With ``max_tokens``, a batch also
    has at most ``max_tokens`` positions. A batch's positions are its
    sentences times its longest sentence's length plus 2, for ``<S>`` and
    ``</S>``, which is what its LSTMs compute. So short sentences make
    wide batches and long ones narrow batches, each about as much work. A
    sentence longer than the budget gets a batch of its own. Sorting keeps
    the padding small, and every index appears in exactly one batch.

    Args:
        lengths: tokens per sentence of the chunk, in input order.
        max_sentences: int >= 1. Sentences per batch at most.
        max_tokens: int >= 1 or None. Padded positions per batch at most.
            None means no budget, i.e. batches of ``max_sentences``.

    Returns:
        A list of int64 arrays, each a batch's indices into ``lengths``,
        shortest sentences first.

    Example:
        >>> [b.tolist() for b in plan_compute_batches([3, 1, 2],
        ...                                            max_sentences=2)]
        [[1, 2], [0]]
        >>> [b.tolist() for b in plan_compute_batches(
        ...     [3, 1, 2, 9], max_sentences=8, max_tokens=12)]
        [[1, 2], [0], [3]]
    """
    check_int("max_sentences", max_sentences, 1)
    check_int("max_tokens", max_tokens, 1, optional=True)
    # Python's sort is stable, as the embedder's always was
    order = np.asarray(sorted(range(len(lengths)), key=lengths.__getitem__),
                       np.int64)
    if max_tokens is None:
        return [order[start: start + max_sentences]
                for start in range(0, len(order), max_sentences)]
    batches, start = [], 0
    for stop in range(1, len(order) + 1):
        # sorted: the batch's longest sentence is its last
        rows, width = stop - start, lengths[order[stop - 1]] + 2
        if rows > 1 and (rows > max_sentences or rows * width > max_tokens):
            batches.append(order[start: stop - 1])
            start = stop - 1
    if start < len(order):
        batches.append(order[start:])
    return batches
