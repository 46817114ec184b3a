"""What the bulk embedding path returns per sentence: all layers, the top
one, their average, or a sentence vector (numpy only, no TensorFlow).

The choices are AllenNLP's ``elmo`` command's (``--all``, ``--top``,
``--average``) plus TF-Hub ELMo's ``default`` output, the mean over the
tokens. Used by :meth:`BidirectionalLanguageModel.embed_sentences
<bilm_keras.BidirectionalLanguageModel.embed_sentences>`,
:func:`~bilm_keras.dump_bilm_embeddings` and ``bilm-keras embed``, which
checks its flags with it before loading TensorFlow.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

#: the choices of ``output``, and what one sentence's array holds
#: (``K`` layers kept, ``n`` tokens, ``D = 2 * projection_dim``)
EMBEDDING_OUTPUTS = {
    "all": "(n_layers, n_tokens, dim)",  # (K, n, D)
    "top": "(n_tokens, dim)",  # (n, D), the top LSTM layer
    "average": "(n_tokens, dim)",  # (n, D), the mean of the K layers
    "sentence_mean": "(dim,)",  # (D,), that mean over the tokens too
}


def embedding_layer_ids(layers: Optional[Sequence[int]], n_lm_layers: int,
                        output: str) -> List[int]:
    """The layer ids an ``output`` needs, from a ``layers`` argument.

    Args:
        layers: None (every layer; the top one for ``"top"``) or indices in
            ``0..n_lm_layers`` (0 = token layer), kept in this order.
        n_lm_layers: LSTM layers of the model.
        output: a key of :data:`EMBEDDING_OUTPUTS`.

    Raises:
        ValueError: an unknown ``output``, no index or one out of range,
            or ``layers`` given with ``"top"``.
    """
    if output not in EMBEDDING_OUTPUTS:
        raise ValueError(f"output: expected one of "
                         f"{', '.join(map(repr, EMBEDDING_OUTPUTS))}, found "
                         f"{output!r}")
    if layers is None:
        return [n_lm_layers] if output == "top" else list(
            range(n_lm_layers + 1))
    layers = list(layers)
    if not layers or any(
        isinstance(i, bool) or not isinstance(i, (int, np.integer))
        or not 0 <= i <= n_lm_layers for i in layers
    ):
        raise ValueError(f"layers: expected indices in 0..{n_lm_layers}, "
                         f"found {layers}")
    if output == "top":
        raise ValueError(f"layers: output 'top' is layer {n_lm_layers}; "
                         f"expected no layers with it, found {layers}")
    return [int(i) for i in layers]


def reduce_layers(layers: np.ndarray, output: str) -> np.ndarray:
    """One sentence's layers `(K, n, D)` reduced as ``output`` asks.

    ``"top"`` expects the top layer alone (``K = 1``, as
    :func:`embedding_layer_ids` gives). A sentence of no tokens gives
    `(K, 0, D)`, `(0, D)` or, for ``"sentence_mean"``, zeros `(D,)` (as
    TF-Hub ELMo's ``default``).
    """
    if output == "all":
        return layers  # (K, n, D)
    if output == "top":
        return layers[0]  # (n, D)
    average = layers.mean(axis=0)  # (n, D)
    if output == "average":
        return average
    if average.shape[0] == 0:
        return np.zeros(average.shape[1:], layers.dtype)  # (D,)
    return average.mean(axis=0)  # (D,)
