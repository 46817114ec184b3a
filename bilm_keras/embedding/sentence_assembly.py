"""The bulk embedder's last step: each sentence's array, assembled in numpy
from its token rows and the LSTMs' time-major outputs, reduced as the
spec asks (:class:`~bilm_keras.embedding.outputs.ResolvedEmbedding`)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from bilm_keras.embedding.outputs import ResolvedEmbedding


def batch_outputs(encoded: dict, directions, sentences, idx, positions,
                  table_rows: np.ndarray, embedding: ResolvedEmbedding
                  ) -> Iterator[tuple[int, np.ndarray]]:
    """``(i, array)`` of each sentence ``i`` of one compute batch.

    Args:
        encoded: the batch's ``encode`` outputs, ``{direction: [(T + 2,
            P, B') per LSTM layer]}``. Rows are columns, and the backward
            LM's are in its reading order.
        directions: the backbone's directions, forward first.
        sentences: the chunk's sentences. ``idx`` are those of the batch,
            in its row order. ``positions`` `(B, T + 2)` are their table
            rows.
        table_rows: `(N + 2, P)`, the token table.
        embedding: what each array holds.
    """
    # np.asarray reads the tensor's buffer (.numpy() copies it)
    layers = [[np.asarray(h) for h in encoded[direction]]
              for direction in directions
              ]  # per direction, per LSTM layer (T + 2, P, B')
    for row, i in enumerate(idx):
        n = len(sentences[i])
        # tokens 1..n: the backward LM read them n..1
        yield i, sentence_output(
            table_rows[positions[row, 1: n + 1]],
            [[h[1: n + 1, :, row] for h in layers[0]]]
            + [[h[n: 0: -1, :, row] for h in backward]
               for backward in layers[1:]],
            embedding,
        )


def sentence_layers(token_embeddings, lstm_layers, layer_ids) -> np.ndarray:
    """One sentence's layers, in the layout of
    :func:`~bilm_keras.models.lm_embeddings.lm_layers`.

    Args:
        token_embeddings: `(n, P)`.
        lstm_layers: per direction, per LSTM layer `(n, P)`.
        layer_ids: the layers to build, in this order (0 = token layer,
            ``l`` = LSTM layer ``l``).

    Returns:
        `(len(layer_ids), n, n_directions * P)` float32: layer 0 the token
        embedding once per direction, layer ``l`` the directions' outputs
        of LSTM layer ``l`` side by side.
    """
    n, dim = token_embeddings.shape
    out = np.empty((len(layer_ids), n, len(lstm_layers) * dim), np.float32)
    for d, direction in enumerate(lstm_layers):
        columns = slice(d * dim, (d + 1) * dim)
        for k, layer in enumerate(layer_ids):
            out[k, :, columns] = (token_embeddings if layer == 0
                                  else direction[layer - 1])
    return out


def sentence_output(token_embeddings, lstm_layers,
                    embedding: ResolvedEmbedding) -> np.ndarray:
    """One sentence's array: its layers (:func:`sentence_layers`) reduced
    as ``embedding`` asks."""
    layers = sentence_layers(token_embeddings, lstm_layers,
                             embedding.layer_ids)
    return embedding.reduce(layers)
