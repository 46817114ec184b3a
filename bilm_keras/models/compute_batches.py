"""How the bulk embedder cuts a chunk of sentences into the batches its
LSTMs run: one pure function, so the policy lives in one place and the
device loop (one device or several) only consumes its list."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def plan_compute_batches(
    lengths: Sequence[int],
    *,
    max_sentences: int,
    max_tokens: int | None = None,
) -> list[np.ndarray]:
    """The compute batches of a chunk: index arrays into it.

    Today's policy: the sentences sorted by length (stable: equal lengths
    keep their input order), cut every ``max_sentences``. Sorting keeps the
    padding small; every index appears in exactly one batch.

    Args:
        lengths: tokens per sentence of the chunk, in input order.
        max_sentences: int >= 1, sentences per batch.
        max_tokens: a token budget per batch; not used by today's policy
            (None).

    Returns:
        A list of int64 arrays, each a batch's indices into ``lengths``,
        shortest sentences first.

    Example:
        >>> [b.tolist() for b in plan_compute_batches([3, 1, 2],
        ...                                            max_sentences=2)]
        [[1, 2], [0]]
    """
    if (not isinstance(max_sentences, (int, np.integer))
            or isinstance(max_sentences, bool) or max_sentences < 1):
        raise ValueError(f"max_sentences: expected a positive integer, "
                         f"found {max_sentences!r}")
    if max_tokens is not None:
        raise ValueError(f"max_tokens: expected None (no token budget in "
                         f"this policy), found {max_tokens!r}")
    # Python's sort is stable, as the embedder's always was
    order = np.asarray(sorted(range(len(lengths)), key=lengths.__getitem__),
                       np.int64)
    return [order[start: start + max_sentences]
            for start in range(0, len(order), max_sentences)]
