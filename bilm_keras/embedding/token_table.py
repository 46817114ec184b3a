"""The bulk embedder's first step: every distinct token of a chunk of
sentences embedded once, and each sentence's positions as rows of that
table.

Once is enough, since the char-CNN and highway layers have no context. A
table of ``N`` distinct tokens has ``N + 2`` rows. Row 0 is ``<S>``, rows
``1..N`` the tokens in order of first appearance, and row ``N + 1``
``</S>``. The boundaries get the batcher's own ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import tensorflow as tf


class TokenTable(NamedTuple):
    """A chunk's distinct tokens and their embeddings."""

    #: ``{token: row}``, rows ``1..N`` in order of first appearance
    rows: dict
    #: `(N + 2, projection_dim)` float32: ``<S>``, the tokens, ``</S>``
    embeddings: tf.Tensor

    @property
    def eos(self) -> int:
        """The row of ``</S>``."""
        return len(self.rows) + 1


def distinct_tokens(sentences: Sequence[Sequence[str]]) -> dict:
    """``{token: row}`` of every distinct token, rows from 1 in order of
    first appearance (row 0 is ``<S>``)."""
    rows: dict[str, int] = {}
    for sentence in sentences:
        for token in sentence:
            if token not in rows:
                rows[token] = len(rows) + 1
    return rows


def embed_tokens(embed: Callable, batcher, tokens: list[str],
                 chunk_size: int) -> tf.Tensor:
    """``<S>``, the ``tokens`` and ``</S>`` through ``embed`` (the
    backbone's traced ``embed_tokens``: ids `(batch, time[, W])` ->
    `(batch, time, projection_dim)`), one row each, ``chunk_size`` tokens
    per call. Returns `(len(tokens) + 2, projection_dim)` float32."""
    ids = batcher.batch_sentences([tokens])[0]  # (N + 2[, W])
    ids = ids[:, None]  # (N + 2, 1[, W]): each token its own row
    parts = [
        embed(tf.constant(ids[i: i + chunk_size], tf.int32))[:, 0]  # (n, P)
        for i in range(0, len(ids), chunk_size)
    ]
    return tf.concat(parts, axis=0)


def batch_positions(sentences, idx, table: TokenTable) -> tuple:
    """One compute batch's inputs of the LSTMs: each position's row of the
    token table, and the lengths.

    Boundaries are included. Padding gathers row 0, which the LSTMs ignore.

    Returns:
        ``(positions, lengths)``: `(B, T + 2)` and `(B,)` int32, the
        sentences ``idx`` in that order, ``T`` the longest.
    """
    n_max = max(len(sentences[i]) for i in idx)
    positions = np.zeros((len(idx), n_max + 2), np.int32)  # (B, T + 2)
    lengths = np.empty((len(idx),), np.int32)
    for row, i in enumerate(idx):
        n = len(sentences[i])
        positions[row, 1: n + 1] = [table.rows[t] for t in sentences[i]]
        positions[row, n + 1] = table.eos
        lengths[row] = n + 2
    return positions, lengths
