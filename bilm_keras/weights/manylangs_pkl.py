"""ELMoForManyLangs state dicts (``token_embedder.pkl``, ``encoder.pkl``) ->
bilm-tf HDF5 datasets.

One declarative table: every HDF5 dataset of a converted model, the torch
keys it is made from, and the transform, each with its one-line reason.
With these transforms bilm-tf's equations, which :class:`BiLMBackbone`
computes, give upstream's numbers, so the highway and LSTM layers need no
variant. See ``tests/fixtures/elmoformanylangs/README.md``, "bilm-tf
form". Sizes, in the names of the fixture README:

* ``D`` char_dim, ``F`` total CNN filters, ``W`` word_dim, ``P``
  projection_dim, ``C`` LSTM cell dim (``dim``), ``L`` layers.

Every expected key and shape is checked by :func:`check_state_dict` before
any transform runs. A file that does not fit the configuration is named
with the key, the expected and the found shape, and nothing is written.
This module reads no files and imports no torch or TensorFlow: its inputs
are numpy arrays.
"""

from __future__ import annotations

import dataclasses
from typing import (
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Sequence,
    Tuple,
)

import numpy as np

from bilm_keras.weights.bilm_tf_names import (
    CHAR_EMBED,
    LSTM_BIAS,
    LSTM_KERNEL,
    LSTM_PROJECTION,
    PROJECTION_BIAS,
    PROJECTION_KERNEL,
    WORD_EMBED,
    conv_bias,
    conv_kernel,
    highway_bias,
    highway_kernel,
    lstm_hdf5_prefix,
    to_tf1_gates,
    without_forget_bias,
)

TOKEN_EMBEDDER_PKL = "token_embedder.pkl"
ENCODER_PKL = "encoder.pkl"

#: upstream's direction names, in bilm-tf's RNN_0 (forward), RNN_1 order
DIRECTIONS = ("forward", "backward")


class ManyLangsWeightError(ValueError):
    """A state dict whose keys or shapes do not fit the model config."""


@dataclasses.dataclass(frozen=True)
class ManyLangsSizes:
    """The sizes a model's state dicts must have (plain numbers).

    Args:
        n_chars: rows of char.dic (the char table, ``<pad>`` included).
        char_dim: D, the char embedding size.
        filters: ``[(width, count), ...]`` in config order.
        n_highway: highway layers.
        n_words: rows of word.dic (0 without a word part).
        word_dim: W, the word embedding size (0: no word part).
        projection_dim: P.
        lstm_dim: C, the LSTM cell size.
        n_layers: L.
    """

    n_chars: int
    char_dim: int
    filters: Tuple[Tuple[int, int], ...]
    n_highway: int
    n_words: int
    word_dim: int
    projection_dim: int
    lstm_dim: int
    n_layers: int

    @property
    def n_filters(self) -> int:
        return sum(count for _, count in self.filters)


# -------------------------------------------------------------- transforms
def _as_stored(x):
    # same meaning in both formats: char/word tables (the <pad> row kept,
    # it is not zero in released models), biases, the projection bias
    return x


def _conv_kernel(w):
    # torch Conv1d (n, D, w) -> bilm-tf conv2d (1, w, D, n): K[0,k,d,o] =
    # W[o,d,k]; both are cross-correlations over the char positions
    return np.transpose(w, (2, 1, 0))[None]


def _transposed(w):
    # torch Linear keeps (out, in) and computes W x; bilm-tf keeps (in, out)
    # and computes x W
    return w.T


def _transform_half_kernel(w):
    # upstream's highway rows 0..F-1 are bilm-tf's relu transform
    return w[: w.shape[0] // 2].T


def _transform_half_bias(b):
    return b[: b.shape[0] // 2]


def _negated_carry_kernel(w):
    # upstream gates the input (g*h + (1-g)*t), bilm-tf the transform
    # (c*t + (1-c)*h); sigmoid(-z) = 1 - sigmoid(z), so c's logits are -z
    return -w[w.shape[0] // 2:].T


def _negated_carry_bias(b):
    return -b[b.shape[0] // 2:]


def _lstm_kernel(w_x, w_h):
    # TF LSTMCell computes [x, h] W_0: input rows first, then recurrent
    # rows; torch's gate blocks are [i f g o], g TF's candidate j
    return to_tf1_gates(np.concatenate([w_x.T, w_h.T], axis=0), "ifjo")


def _lstm_bias(b):
    # TF's LSTMCell adds a forget bias to the f logits, upstream adds
    # nothing: the stored f bias is lowered to cancel it
    return without_forget_bias(to_tf1_gates(b, "ifjo"))


# ------------------------------------------------------------------- table
@dataclasses.dataclass(frozen=True)
class PklRow:
    """One HDF5 dataset: the .pkl file and keys it is made from, and how."""

    hdf5_path: str
    pkl_file: str
    keys: Tuple[str, ...]
    transform: Callable[..., np.ndarray]


def manylangs_table(sizes: ManyLangsSizes) -> List[PklRow]:
    """Every HDF5 dataset of a converted model, in bilm-tf's file order."""
    t = TOKEN_EMBEDDER_PKL
    rows = [PklRow(CHAR_EMBED, t, ("char_emb_layer.embedding.weight",),
                   _as_stored)]
    for i in range(len(sizes.filters)):
        rows += [
            PklRow(conv_kernel(i), t, (f"convolutions.{i}.weight",),
                   _conv_kernel),
            PklRow(conv_bias(i), t, (f"convolutions.{i}.bias",),
                   _as_stored),
        ]
    for k in range(sizes.n_highway):
        w, b = f"highways._layers.{k}.weight", f"highways._layers.{k}.bias"
        rows += [
            PklRow(highway_kernel(k, "carry"), t, (w,),
                   _negated_carry_kernel),
            PklRow(highway_bias(k, "carry"), t, (b,), _negated_carry_bias),
            PklRow(highway_kernel(k, "transform"), t, (w,),
                   _transform_half_kernel),
            PklRow(highway_bias(k, "transform"), t, (b,),
                   _transform_half_bias),
        ]
    if sizes.word_dim:
        rows.append(PklRow(WORD_EMBED, t,
                           ("word_emb_layer.embedding.weight",), _as_stored))
    rows += [
        # projection.weight's columns are [word ; char], as our projection
        # kernel's rows
        PklRow(PROJECTION_KERNEL, t, ("projection.weight",), _transposed),
        PklRow(PROJECTION_BIAS, t, ("projection.bias",), _as_stored),
    ]
    for d, direction in enumerate(DIRECTIONS):
        for layer in range(sizes.n_layers):
            k = f"{direction}_layer_{layer}"
            p = lstm_hdf5_prefix(d, layer)
            rows += [
                PklRow(f"{p}/{LSTM_KERNEL}", ENCODER_PKL,
                       (f"{k}.input_linearity.weight",
                        f"{k}.state_linearity.weight"), _lstm_kernel),
                PklRow(f"{p}/{LSTM_BIAS}", ENCODER_PKL,
                       (f"{k}.state_linearity.bias",), _lstm_bias),
                PklRow(f"{p}/{LSTM_PROJECTION}", ENCODER_PKL,
                       (f"{k}.state_projection.weight",), _transposed),
            ]
    return rows


def expected_state_dicts(
    sizes: ManyLangsSizes,
) -> Dict[str, Dict[str, Tuple[int, ...]]]:
    """``{pkl_file: {key: shape}}``: upstream's ``state_dict()`` keys and
    shapes for these sizes, in upstream's key order."""
    D, F, P, C = (sizes.char_dim, sizes.n_filters, sizes.projection_dim,
                  sizes.lstm_dim)
    token: Dict[str, Tuple[int, ...]] = {}
    if sizes.word_dim:
        token["word_emb_layer.embedding.weight"] = (sizes.n_words,
                                                    sizes.word_dim)
    token["char_emb_layer.embedding.weight"] = (sizes.n_chars, D)
    for i, (width, count) in enumerate(sizes.filters):
        token[f"convolutions.{i}.weight"] = (count, D, width)
        token[f"convolutions.{i}.bias"] = (count,)
    for k in range(sizes.n_highway):
        token[f"highways._layers.{k}.weight"] = (2 * F, F)
        token[f"highways._layers.{k}.bias"] = (2 * F,)
    token["projection.weight"] = (P, sizes.word_dim + F)
    token["projection.bias"] = (P,)
    encoder: Dict[str, Tuple[int, ...]] = {}
    for layer in range(sizes.n_layers):
        for direction in DIRECTIONS:
            k = f"{direction}_layer_{layer}"
            encoder[f"{k}.input_linearity.weight"] = (4 * C, P)
            encoder[f"{k}.state_linearity.weight"] = (4 * C, P)
            encoder[f"{k}.state_linearity.bias"] = (4 * C,)
            encoder[f"{k}.state_projection.weight"] = (P, C)
    return {TOKEN_EMBEDDER_PKL: token, ENCODER_PKL: encoder}


def _shape_text(shape: Sequence[int]) -> str:
    return str(tuple(int(n) for n in shape))


def check_state_dict(
    source: str,
    found: Mapping[str, Tuple[int, ...]],
    expected: Mapping[str, Tuple[int, ...]],
) -> None:
    """Raises :class:`ManyLangsWeightError` (one line: the file, the key,
    expected and found) unless ``found``'s keys and shapes are exactly
    ``expected``'s.

    Args:
        source: the .pkl file, as the message names it.
        found / expected: ``{key: shape}``.
    """
    for key, shape in expected.items():
        if key not in found:
            raise ManyLangsWeightError(
                f"{source}: key {key!r}: expected shape "
                f"{_shape_text(shape)}, found no such key"
            )
        if tuple(found[key]) != tuple(shape):
            raise ManyLangsWeightError(
                f"{source}: key {key!r}: expected shape "
                f"{_shape_text(shape)}, found {_shape_text(found[key])}"
            )
    for key in found:
        if key not in expected:
            raise ManyLangsWeightError(
                f"{source}: key {key!r}: expected no such key (the config "
                f"has no layer for it), found shape "
                f"{_shape_text(found[key])}"
            )


def convert_state_dicts(
    state_dicts: Mapping[str, Mapping[str, np.ndarray]],
    sizes: ManyLangsSizes,
    *,
    sources: Mapping[str, str] | None = None,
) -> Iterator[Tuple[str, np.ndarray]]:
    """upstream's state dicts -> ``(hdf5_path, float32 array)`` pairs.

    Every key and shape is checked when this is called, before anything is
    converted. The datasets are then converted one at a time as the
    iterator is consumed. A released model's tensors are about 400 MB, and
    this keeps at most one converted copy beside them.

    Args:
        state_dicts: ``{pkl_file: {key: array}}`` for
            :data:`TOKEN_EMBEDDER_PKL` and :data:`ENCODER_PKL`.
        sizes: what the config and dictionaries say.
        sources: the path to name in errors per pkl_file (default the
            file name).

    Raises:
        ManyLangsWeightError: a missing or extra key, or a wrong shape.
    """
    sources = dict(sources or {})
    # the config's counts say how many keys each file holds at least: more
    # than a file has is refused before the keys are listed (a count of
    # 10**31 would list them until memory runs out)
    wanted = {ENCODER_PKL: 4 * len(DIRECTIONS) * sizes.n_layers,
              TOKEN_EMBEDDER_PKL: 2 * (sizes.n_highway + len(sizes.filters))}
    for pkl_file, count in wanted.items():
        if count > len(state_dicts[pkl_file]):
            raise ManyLangsWeightError(
                f"{sources.get(pkl_file, pkl_file)}: expected at least "
                f"{count} keys for the config's n_layers {sizes.n_layers}, "
                f"n_highway {sizes.n_highway} and {len(sizes.filters)} "
                f"filters, found {len(state_dicts[pkl_file])}")
    for pkl_file, expected in expected_state_dicts(sizes).items():
        state = state_dicts[pkl_file]
        check_state_dict(sources.get(pkl_file, pkl_file),
                         {k: np.shape(v) for k, v in state.items()},
                         expected)

    def converted():
        for row in manylangs_table(sizes):
            args = [np.asarray(state_dicts[row.pkl_file][k], np.float32)
                    for k in row.keys]
            yield row.hdf5_path, np.ascontiguousarray(
                row.transform(*args), dtype=np.float32)

    return converted()
