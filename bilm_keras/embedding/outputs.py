"""What the bulk embedding path returns per sentence, as one value,
:class:`EmbeddingSpec`.

It says which output (all layers, the top one, their average, a task's
weighted mix, or a sentence vector), of which layers, in which dtype. It
needs numpy only, no TensorFlow.

The choices are AllenNLP's ``elmo`` command's: ``--all``, ``--top`` and
``--average``. Then ELMo's task mix ``gamma * sum_j s_j h_j``, the cache
the paper's eq. (1) allows, one vector per token instead of ``L + 1``.
Then TF-Hub ELMo's ``default`` output, the mean over the tokens. Used by
:meth:`BidirectionalLanguageModel.embed_sentences
<bilm_keras.BidirectionalLanguageModel.embed_sentences>`,
:func:`~bilm_keras.dump_bilm_embeddings` and ``bilm-keras embed``, which
checks its flags with it before loading TensorFlow.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Optional, Sequence, Tuple

import numpy as np

from bilm_keras._utils.settings import (
    SettingError,
    check_choice,
    is_finite_number,
    is_int,
)
from bilm_keras.weights.alignment import apply_alignment

#: the choices of ``output``, and what one sentence's array holds
#: (``K`` layers kept, ``n`` tokens, ``D = 2 * projection_dim``)
EMBEDDING_OUTPUTS = {
    "all": "(n_layers, n_tokens, dim)",  # (K, n, D)
    "top": "(n_tokens, dim)",  # (n, D), the top LSTM layer
    "average": "(n_tokens, dim)",  # (n, D), the mean of the K layers
    "mix": "(n_tokens, dim)",  # (n, D), gamma * sum_k s_k h_k
    "sentence_mean": "(dim,)",  # (D,), that mean over the tokens too
}


class LayerMix(NamedTuple):
    """The mix of ``output="mix"``: ``gamma * sum_k weights[k] * h_k``, from
    :meth:`EmbeddingSpec.resolve`."""

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
    """The ``s_k`` of raw layer weights ``w``, as `(K,)` float64.

    ``w`` is a trained :class:`~bilm_keras.layers.scalar_mix.ScalarMix`'s
    ``scalar_weights``, bilm-tf's ``{name}_ELMo_W``. ``s`` is
    ``softmax(w + 1/K)``, bilm-tf's ``weight_layers`` formula. The ``1/K``
    shifts every logit alike, so it cancels, but it is kept to be that
    formula."""
    w = np.asarray(logits, np.float64)
    w = w + 1.0 / len(w)
    e = np.exp(w - w.max())  # (K,), shifted: no overflow
    return e / e.sum()


#: the choices of ``dtype``: what the arrays are stored as
EMBEDDING_DTYPES = ("float32", "float16")

#: the fields of :class:`EmbeddingSpec` that name an output's mix
_MIX_FIELDS = ("mix_weights", "mix_logits", "gamma")


@dataclasses.dataclass(frozen=True)
class EmbeddingSpec:
    """What to embed: which output, of which layers, mixed how, stored as
    what.

    It is one value for the bulk embedding path, which takes it as
    ``spec``. That path is :meth:`BulkEmbedder.embed_sentences
    <bilm_keras.embedding.bulk_embedder.BulkEmbedder.embed_sentences>`,
    ``iter_embeddings``, :func:`~bilm_keras.dump_bilm_embeddings` and
    ``bilm-keras embed``. The facade
    :meth:`BidirectionalLanguageModel.embed_sentences
    <bilm_keras.BidirectionalLanguageModel.embed_sentences>` also takes its
    fields as keyword arguments, bilm-tf's and AllenNLP's users' way. It
    builds the spec from them in one place. Each field is documented here
    alone.

    It is checked when built. A bad field raises
    :class:`~bilm_keras._utils.settings.SettingError` whose ``field`` is
    the field's name. :meth:`resolve` checks what depends on the model
    before anything is embedded, against the model's number of LSTM
    layers. That is the layer indices, and the number of mix weights when
    ``layers`` is None.

    Fields, with ``L`` the LSTM layers of the model, ``D`` =
    ``2 * projection_dim`` and ``n`` a sentence's tokens:
        output: str. What each sentence's array holds, one of
            :data:`EMBEDDING_OUTPUTS`:

            * ``"all"``, the default: every layer `(K, n, D)`.
            * ``"top"``: the top LSTM layer `(n, D)`.
            * ``"average"``: the mean of the layers `(n, D)`.
            * ``"mix"``: a task's mix ``gamma * sum_k s_k h_k`` `(n, D)`.
              This is ELMo's eq. (1), one vector per token to cache.
            * ``"sentence_mean"``: the mean over the layers and the tokens
              `(D,)`, TF-Hub ELMo's ``default``. It is zeros for a sentence
              of no tokens.
        layers: tuple of int or None. The layers kept (``"all"``),
            averaged (``"average"``, ``"sentence_mean"``) or mixed
            (``"mix"``), in this order. 0 is the token layer and ``L`` the
            top. None, the default, means every layer. Not with ``"top"``.
            ``K`` is their number.
        mix_weights: tuple of float or None. For ``"mix"``, the normalised
            ``s_k``, one per layer mixed, used as given. Any finite numbers
            are taken, and a trained mix's sum to 1.
        mix_logits: tuple of float or None. For ``"mix"``, instead of
            ``mix_weights``, the raw weights ``w`` of a trained
            :class:`~bilm_keras.layers.scalar_mix.ScalarMix` or
            ``weight_layers``. Then ``s = softmax(w + 1/K)``
            (:func:`mix_weights_from_logits`).
        gamma: float or None. For ``"mix"``, the scale. None means 1.0.
        dtype: str. The arrays' dtype, ``"float32"`` (the default) or
            ``"float16"``, half the bytes with about 3 significant
            digits.

    Example:
        >>> spec = EmbeddingSpec(output="mix", layers=(1, 2),
        ...                      mix_weights=(0.4, 0.6), dtype="float16")
        >>> spec.resolve(n_lm_layers=2).layer_ids
        (1, 2)
    """

    output: str = "all"
    layers: Optional[Tuple[int, ...]] = None
    mix_weights: Optional[Tuple[float, ...]] = None
    mix_logits: Optional[Tuple[float, ...]] = None
    gamma: Optional[float] = None
    dtype: str = "float32"

    def __post_init__(self):
        check_choice("output", self.output, tuple(EMBEDDING_OUTPUTS))
        check_choice("dtype", self.dtype, EMBEDDING_DTYPES)
        if self.layers is not None:
            if isinstance(self.layers, (str, bytes)) or not isinstance(
                    self.layers, (Sequence, np.ndarray)):
                raise SettingError("layers", f"expected a list of layer "
                                             f"indices, found "
                                             f"{self.layers!r}")
            object.__setattr__(self, "layers", tuple(
                self.layers.tolist() if isinstance(self.layers, np.ndarray)
                else self.layers))
        given = [name for name in _MIX_FIELDS
                 if getattr(self, name) is not None]
        if self.output != "mix":
            if given:
                raise SettingError(given[0], f"only with output 'mix', "
                                             f"found output "
                                             f"{self.output!r}")
            return
        if (self.mix_weights is None) == (self.mix_logits is None):
            raise SettingError(
                "mix_weights",
                "output 'mix' takes either mix_weights (the normalised "
                "s_j) or mix_logits (a ScalarMix's raw weights), found "
                f"{'both' if self.mix_weights is not None else 'neither'}")
        name = "mix_weights" if self.mix_weights is not None else "mix_logits"
        object.__setattr__(self, name, tuple(
            float(v) for v in _finite_numbers(getattr(self, name), name)))
        if self.gamma is not None:
            if not is_finite_number(self.gamma):
                raise SettingError("gamma", f"expected a finite number, "
                                            f"found {self.gamma!r}")
            object.__setattr__(self, "gamma", float(self.gamma))

    def resolve(self, n_lm_layers: int) -> "ResolvedEmbedding":
        """The spec for a model of ``n_lm_layers`` LSTM layers: the layer
        ids its output reads and its mix.

        Raises:
            SettingError: ``layers`` empty, not integers, out of
                ``0..n_lm_layers`` or given with ``"top"``. Or a number of
                mix weights other than the layers mixed.
        """
        layer_ids = self._layer_ids(n_lm_layers)
        mix = None
        if self.output == "mix":
            name = ("mix_weights" if self.mix_weights is not None
                    else "mix_logits")
            values = np.asarray(getattr(self, name), np.float64)
            if len(values) != len(layer_ids):
                raise SettingError(
                    name, f"expected {len(layer_ids)} "
                          f"value{'s' * (len(layer_ids) != 1)}, one per "
                          f"layer mixed {list(layer_ids)}, found "
                          f"{len(values)}: {values.tolist()}")
            gamma = 1.0 if self.gamma is None else self.gamma
            mix = (LayerMix(values, gamma) if name == "mix_weights" else
                   LayerMix(mix_weights_from_logits(values), gamma, values))
        return ResolvedEmbedding(self, layer_ids, mix)

    def _layer_ids(self, n_lm_layers: int) -> Tuple[int, ...]:
        if self.layers is None:
            return ((n_lm_layers,) if self.output == "top"
                    else tuple(range(n_lm_layers + 1)))
        layers = list(self.layers)
        if not layers or any(not is_int(i) or not 0 <= i <= n_lm_layers
                             for i in layers):
            raise SettingError("layers", f"expected indices in "
                                         f"0..{n_lm_layers}, found {layers}")
        if self.output == "top":
            raise SettingError("layers", f"output 'top' is layer "
                                         f"{n_lm_layers}; expected no "
                                         f"layers with it, found {layers}")
        return tuple(int(i) for i in layers)


class ResolvedEmbedding(NamedTuple):
    """An :class:`EmbeddingSpec` for one model (:meth:`EmbeddingSpec.
    resolve`): what the embedder computes for each sentence."""

    #: the spec
    spec: EmbeddingSpec
    #: the layer ids the output reads, in order (0 = the token layer)
    layer_ids: Tuple[int, ...]
    #: the mix of ``output="mix"``, else None
    mix: Optional[LayerMix]
    #: the matrices `(D, D)` that map the layers of :attr:`layer_ids`
    #: before they are reduced (a cross-lingual alignment), else None
    alignment: Optional[tuple] = None

    @property
    def output(self) -> str:
        return self.spec.output

    @property
    def dtype(self) -> str:
        return self.spec.dtype

    def reduce(self, layers: np.ndarray) -> np.ndarray:
        """One sentence's layers `(K, n, D)` (those of :attr:`layer_ids`)
        as the spec asks: :func:`reduce_layers`, in :attr:`dtype`."""
        if self.alignment is not None:
            layers = apply_alignment(layers, self.alignment)  # (K, n, D)
        return reduce_layers(layers, self.spec.output, self.mix).astype(
            self.spec.dtype, copy=False)


def _finite_numbers(values, name: str) -> np.ndarray:
    """``values`` as `(K,)` float64, or a SettingError naming ``name``."""
    if isinstance(values, np.ndarray):
        values = values.ravel().tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise SettingError(name, f"expected a list of numbers, found "
                                 f"{values!r}")
    values = list(values)
    if not all(is_finite_number(v) for v in values):
        raise SettingError(name, f"expected finite numbers, found {values}")
    return np.asarray(values, np.float64)


def reduce_layers(layers: np.ndarray, output: str,
                  mix: Optional[LayerMix] = None) -> np.ndarray:
    """One sentence's layers `(K, n, D)` reduced as ``output`` asks.

    ``"top"`` expects the top layer alone (``K = 1``), as
    :meth:`EmbeddingSpec.resolve` gives. ``"mix"`` expects its
    :class:`LayerMix`, ``K`` weights in the order of the layers. A sentence
    of no tokens gives `(K, 0, D)` or `(0, D)`. For ``"sentence_mean"`` it
    gives zeros `(D,)`, as TF-Hub ELMo's ``default`` does.
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
