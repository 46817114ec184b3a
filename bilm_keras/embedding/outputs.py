"""What the bulk embedding path returns per sentence: all layers, the top
one, their average, a task's weighted mix, or a sentence vector (numpy
only, no TensorFlow).

The choices are AllenNLP's ``elmo`` command's (``--all``, ``--top``,
``--average``), ELMo's task mix ``gamma * sum_j s_j h_j`` (the cache the
paper's eq. (1) allows: one vector per token instead of ``L + 1``) and
TF-Hub ELMo's ``default`` output, the mean over the tokens. Used by
:meth:`BidirectionalLanguageModel.embed_sentences
<bilm_keras.BidirectionalLanguageModel.embed_sentences>`,
:func:`~bilm_keras.dump_bilm_embeddings` and ``bilm-keras embed``, which
checks its flags with it before loading TensorFlow.
"""

from __future__ import annotations

import math
from typing import List, NamedTuple, Optional, Sequence

import numpy as np

#: the choices of ``output``, and what one sentence's array holds
#: (``K`` layers kept, ``n`` tokens, ``D = 2 * projection_dim``)
EMBEDDING_OUTPUTS = {
    "all": "(n_layers, n_tokens, dim)",  # (K, n, D)
    "top": "(n_tokens, dim)",  # (n, D), the top LSTM layer
    "average": "(n_tokens, dim)",  # (n, D), the mean of the K layers
    "mix": "(n_tokens, dim)",  # (n, D), gamma * sum_k s_k h_k
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


class LayerMix(NamedTuple):
    """The mix of ``output="mix"``: ``gamma * sum_k weights[k] * h_k``, from
    :func:`layer_mix`."""

    #: `(K,)` float64, the normalised ``s_k`` applied, in the order of the
    #: layers mixed
    weights: np.ndarray
    #: the scale
    gamma: float
    #: `(K,)` float64, the raw weights they came from (``mix_logits``), or
    #: None when ``mix_weights`` were given
    logits: Optional[np.ndarray] = None

    @property
    def form(self) -> str:
        """``"weights"`` (normalised ``s_k`` given) or ``"logits"``."""
        return "weights" if self.logits is None else "logits"


def mix_weights_from_logits(logits: Sequence[float]) -> np.ndarray:
    """The ``s_k`` of raw layer weights ``w`` (a trained
    :class:`~bilm_keras.layers.scalar_mix.ScalarMix`'s ``scalar_weights``,
    bilm-tf's ``{name}_ELMo_W``): ``softmax(w + 1/K)``, bilm-tf's
    ``weight_layers`` formula (the ``1/K`` shifts every logit alike, so it
    cancels; it is kept to be that formula). `(K,)` float64."""
    w = np.asarray(logits, np.float64)
    w = w + 1.0 / len(w)
    e = np.exp(w - w.max())  # (K,), shifted: no overflow
    return e / e.sum()


def _is_finite_number(value) -> bool:
    return (not isinstance(value, (bool, np.bool_))
            and isinstance(value, (int, float, np.integer, np.floating))
            and math.isfinite(value))


def _finite_numbers(values, name: str) -> np.ndarray:
    """``values`` as `(K,)` float64, or a ValueError naming ``name``."""
    if isinstance(values, np.ndarray):
        values = values.ravel().tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ValueError(f"{name}: expected a list of numbers, found "
                         f"{values!r}")
    values = list(values)
    if not all(_is_finite_number(v) for v in values):
        raise ValueError(f"{name}: expected finite numbers, found {values}")
    return np.asarray(values, np.float64)


def layer_mix(
    output: str,
    layer_ids: Sequence[int],
    *,
    mix_weights: Optional[Sequence[float]] = None,
    mix_logits: Optional[Sequence[float]] = None,
    gamma: Optional[float] = None,
) -> Optional[LayerMix]:
    """Checks the mix arguments of a call; the mix of ``output="mix"``.

    Args:
        output: a key of :data:`EMBEDDING_OUTPUTS`.
        layer_ids: the layers mixed (:func:`embedding_layer_ids`).
        mix_weights: the normalised ``s_k``, one per layer mixed, used as
            given: any finite numbers (a task's trained ``s_k`` sum to 1;
            nothing here requires it).
        mix_logits: instead, raw weights ``w`` (a trained ``ScalarMix`` /
            ``weight_layers``): ``s = softmax(w + 1/K)``
            (:func:`mix_weights_from_logits`).
        gamma: the scale, a finite number (default 1.0).

    Returns:
        A :class:`LayerMix` for ``output="mix"``, else None.

    Raises:
        ValueError: naming the argument: a mix argument without
            ``output="mix"``, neither or both of ``mix_weights`` and
            ``mix_logits``, a count other than ``len(layer_ids)``, a value
            that is not a finite number.
    """
    given = [name for name, value in (("mix_weights", mix_weights),
                                      ("mix_logits", mix_logits),
                                      ("gamma", gamma)) if value is not None]
    if output != "mix":
        if given:
            raise ValueError(f"{given[0]}: only with output 'mix', found "
                             f"output {output!r}")
        return None
    if (mix_weights is None) == (mix_logits is None):
        raise ValueError(
            "mix_weights: output 'mix' takes either mix_weights (the "
            "normalised s_j) or mix_logits (a ScalarMix's raw weights), "
            f"found {'both' if mix_weights is not None else 'neither'}")
    name = "mix_weights" if mix_weights is not None else "mix_logits"
    values = _finite_numbers(
        mix_weights if mix_weights is not None else mix_logits, name)
    layer_ids = [int(i) for i in layer_ids]
    if len(values) != len(layer_ids):
        raise ValueError(
            f"{name}: expected {len(layer_ids)} "
            f"value{'s' * (len(layer_ids) != 1)}, one per layer mixed "
            f"{layer_ids}, found {len(values)}: {values.tolist()}")
    if gamma is None:
        gamma = 1.0
    if not _is_finite_number(gamma):
        raise ValueError(f"gamma: expected a finite number, found {gamma!r}")
    if mix_weights is not None:
        return LayerMix(values, float(gamma))
    return LayerMix(mix_weights_from_logits(values), float(gamma), values)


def reduce_layers(layers: np.ndarray, output: str,
                  mix: Optional[LayerMix] = None) -> np.ndarray:
    """One sentence's layers `(K, n, D)` reduced as ``output`` asks.

    ``"top"`` expects the top layer alone (``K = 1``, as
    :func:`embedding_layer_ids` gives); ``"mix"`` its :class:`LayerMix`
    (``K`` weights, in the order of the layers). A sentence of no tokens
    gives `(K, 0, D)`, `(0, D)` or, for ``"sentence_mean"``, zeros `(D,)`
    (as TF-Hub ELMo's ``default``).
    """
    if output == "all":
        return layers  # (K, n, D)
    if output == "top":
        return layers[0]  # (n, D)
    if output == "mix":
        if mix is None:
            raise ValueError("mix: output 'mix' needs its LayerMix")
        # gamma * sum_k s_k h_k, as ScalarMix (the sum, then the scale)
        weights = mix.weights.astype(layers.dtype)  # (K,)
        mixed = np.tensordot(weights, layers, axes=1)  # (n, D)
        return mixed * layers.dtype.type(mix.gamma)
    average = layers.mean(axis=0)  # (n, D)
    if output == "average":
        return average
    if average.shape[0] == 0:
        return np.zeros(average.shape[1:], layers.dtype)  # (D,)
    return average.mean(axis=0)  # (D,)
