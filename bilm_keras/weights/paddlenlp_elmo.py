"""PaddleNLP 2.x ELMo ``.pdparams`` -> a :class:`PaddleModel` in bilm-tf's
layout.

::

    from bilm_keras.weights.paddlenlp_elmo import read_paddlenlp
    model = read_paddlenlp("checkpoints/final.pdparams",
                           vocab_file="vocab-15w.txt")

PaddleNLP's ``examples/language_model/elmo/elmo.py`` is ``ELMo``, task
``pre-train``, as ``run_pretrain.py`` saves it. It is bilm-tf's character
biLM with these differences, each undone by one transform in
:func:`_bilm_tf_datasets`:

* The char table is ``[262, char_dim]``, row 0 the padding id of the
  +1-shifted char ids. bilm-tf's file has no such row, so it is dropped.
  It only ever meets padded token positions.
* Conv kernels are ``[filters, char_dim, 1, width]``, Paddle's
  NCHW-ordered ``Conv2D`` weight. bilm-tf's is
  ``[1, width, char_dim, filters]``.
* Highways and the projection are ``nn.Linear`` weights ``[in, out]``.
  That is bilm-tf's orientation already, with bilm-tf's carry/transform
  meaning. The projection exists only when the filter total differs from
  ``projection_dim``.
* Each direction has ``num_layers`` separate single-layer ``nn.LSTM``\\ s
  of hidden size ``projection_dim``. They have no cell projection, no
  clipping and no residual connection. Their gate blocks are (i, f, g, o).
  The input and recurrent weights ``[4P, in]`` and ``[4P, P]`` are apart.
* The LSTM biases are ``bias_ih``, and from Paddle 2.6 a frozen zero
  ``bias_hh``. There is no forget-bias constant. bilm-tf's cell adds 1.0,
  so it is subtracted here.
* Each LSTM's weights are in the file twice, as ``N.weight_ih_l0`` ... and
  ``N.0.cell.weight_ih`` ..., one parameter with two names. Both are read
  and must agree.
* There is one softmax, ``_linear_layer.weight [P, V]``, and its bias.
  bilm-tf's is ``[V, P]``.

The vocabulary file of PaddleNLP holds only words. PaddleNLP's
``Vocabulary`` puts ``UNK`` (0), ``<S>`` (1), ``</S>`` (2) and ``<PAD>``
(3) before them. The model's ``vocab`` gives those four ids the lines
``<UNK>``, ``<S>``, ``</S>``, ``<PAD>``. Our
:class:`~bilm_keras.data.vocabulary.Vocabulary` reads them to the same
ids, and an unknown word is id 0 in both.

Nothing is known of ``max_characters_per_token`` from the file.
PaddleNLP's default and bilm-tf's, 50, is assumed: a token keeps 48 UTF-8
bytes.
"""

from __future__ import annotations

import collections.abc
import logging
import os
import re

import numpy as np

from bilm_keras._utils.problem_list import name_list
from bilm_keras.weights.bilm_tf_names import (
    CHAR_EMBED,
    HIGHWAY_PARTS,
    LSTM_BIAS,
    LSTM_KERNEL,
    PROJECTION_BIAS,
    PROJECTION_KERNEL,
    conv_bias,
    conv_kernel,
    highway_bias,
    highway_kernel,
    lstm_hdf5_prefix,
    to_tf1_gates,
    without_forget_bias,
    SOFTMAX_B_KEY,
    SOFTMAX_W_KEY,
)
from bilm_keras.weights.model_detection import PDPARAMS_SUFFIX
from bilm_keras.weights.paddle_model import PaddleFormatError, PaddleModel
from bilm_keras.weights.paddle_pdparams import (
    STRUCTURED_NAMES_KEY,
    PdparamsError,
    read_pdparams,
)

logger = logging.getLogger(__name__)

EMBEDDER = "_token_embding_layer."  # sic: PaddleNLP's attribute name
CHAR_TABLE = EMBEDDER + "_char_embedding_layer.weight"
PROJECTION = EMBEDDER + "_linear_layer."
SOFTMAX = "_linear_layer."
#: PaddleNLP's vocabulary entries before the file's words, in id order,
#: as our vocab.txt spells them (PaddleNLP spells the first "UNK")
SPECIAL_TOKENS = ("<UNK>", "<S>", "</S>", "<PAD>")
#: ``run_pretrain.py`` saves its optimizer's state beside the weights
PDOPT_SUFFIX = ".pdopt"
#: Adagrad's accumulator of a parameter: ``<internal name>_moment_0``
MOMENT_SUFFIX = "_moment_0"
#: PaddleNLP's char ids: 256 bytes + 5 markers + the padding id 0
N_CHARACTERS = 262
#: not stored in the file; PaddleNLP's and bilm-tf's default
MAX_CHARACTERS_PER_TOKEN = 50
#: PaddleNLP's ``args.py`` defaults, written into options.json
TRAINING_DEFAULTS = {
    "dropout": 0.1,
    "unroll_steps": 20,
    "batch_size": 128,
    "learning_rate": 0.2,
    "all_clip_norm_val": 10.0,
}

_CONV = re.compile(re.escape(EMBEDDER) + r"cnn_layer_(\d+)\.(weight|bias)$")
_HIGHWAY = re.compile(re.escape(EMBEDDER) + r"_highway_layer\."
                      r"(carry|transform)_linear_(\d+)\.(weight|bias)$")
_LSTM = re.compile(r"_elmobilm\.(forward|backward)_lstm_layer_(\d+)\.(.+)$")
#: an LSTM's parameters under its two names: flat, cell (None: optional)
_LSTM_PARAMS = {
    "weight_ih": ("weight_ih_l0", "0.cell.weight_ih"),
    "weight_hh": ("weight_hh_l0", "0.cell.weight_hh"),
    "bias_ih": ("bias_ih_l0", "0.cell.bias_ih"),
    "bias_hh": ("bias_hh_l0", "0.cell.bias_hh"),
}
_DIRECTIONS = ("forward", "backward")


def is_paddlenlp_state(state: dict) -> bool:
    """Whether a ``.pdparams`` dict is PaddleNLP's ELMo (its char table)."""
    return CHAR_TABLE in state


def _expect(path: str, state: dict, key: str, shape: tuple, why: str
            ) -> np.ndarray:
    if key not in state:
        raise PaddleFormatError(
            f"{path}: {key}: expected a parameter of shape {shape} ({why}), "
            "found none")
    value = state[key]
    if tuple(value.shape) != shape:
        raise PaddleFormatError(
            f"{path}: {key}: expected shape {shape} ({why}), found "
            f"{tuple(value.shape)}")
    return value


def _numbered(path: str, found: dict[int, object], what: str) -> int:
    """How many of ``what`` (0..n-1, none missing)."""
    n = len(found)
    if sorted(found) != list(range(n)):
        missing = sorted(set(range(max(found) + 1)) - set(found))
        raise PaddleFormatError(
            f"{path}: {what}: expected 0..{max(found)} without a gap, found "
            f"none numbered {missing[0]}")
    return n


def _lstm_arrays(path: str, state: dict, prefix: str, dim_p: int
                 ) -> dict[str, np.ndarray]:
    """One single-layer LSTM's four arrays. Where both names are present,
    they must agree."""
    shapes = {"weight_ih": (4 * dim_p, dim_p), "weight_hh": (4 * dim_p, dim_p),
              "bias_ih": (4 * dim_p,), "bias_hh": (4 * dim_p,)}
    out = {}
    for param, names in _LSTM_PARAMS.items():
        keys = [prefix + n for n in names if prefix + n in state]
        if not keys:
            if param == "bias_hh":  # Paddle < 2.6 wrote none (it is zero)
                out[param] = np.zeros(shapes[param], np.float32)
                continue
            raise PaddleFormatError(
                f"{path}: {prefix}{names[0]}: expected a parameter of shape "
                f"{shapes[param]} (an LSTM of hidden size {dim_p}), found "
                "none")
        values = [_expect(path, state, k, shapes[param],
                          f"an LSTM of hidden size {dim_p}") for k in keys]
        if len(values) == 2 and not np.array_equal(values[0], values[1]):
            raise PaddleFormatError(
                f"{path}: {keys[1]}: expected the same values as {keys[0]} "
                "(one parameter under two names), found others")
        out[param] = values[0]
    return out


def _bilm_tf_datasets(path: str, state: dict, *, moment: bool = False
                      ) -> tuple[dict, dict]:
    """(bilm-tf HDF5 datasets, sizes) from a PaddleNLP state dict.

    Every key and shape is checked first, and every key used. With
    ``moment``, the state is Adagrad's accumulators under the parameters'
    names. They take the same moves, without the forget-bias shift.

    There is one reader a section, in the order each needs the last one's
    sizes. The order is the char-CNN, the LSTMs' sizes, the highways and
    projection, the LSTM weights, the softmax. Each adds its datasets to
    ``out`` and its keys to ``used``."""
    used = {STRUCTURED_NAMES_KEY}
    out: dict = {}
    dim_c, filters = _char_cnn(path, state, out, used)
    n_filters = sum(num for _, num in filters)
    n_layers, dim_p = _lstm_sizes(path, state)
    if n_filters < dim_p:
        # PaddleNLP would project up; bilm-tf's char-CNN (and so its
        # options and ours) projects down only
        raise PaddleFormatError(
            f"{path}: {EMBEDDER}cnn_layer_N: expected at least "
            f"projection_dim={dim_p} filters in total (bilm-tf's char-CNN "
            f"projects down only), found {n_filters}")
    n_highway = _highways_and_projection(path, state, n_filters, dim_p,
                                         out, used)
    _lstm_weights(path, state, n_layers, dim_p, moment, out, used)
    softmax_w, softmax_b = _softmax(path, state, dim_p, used)

    unused = set(state) - used
    if unused:
        raise PaddleFormatError(
            f"{path}: {name_list(sorted(unused))}: expected only "
            f"PaddleNLP ELMo's parameters, found {len(unused)} more")
    sizes = {"char_dim": dim_c, "filters": filters, "n_highway": n_highway,
             "projection_dim": dim_p, "n_layers": n_layers,
             "n_vocab": softmax_w.shape[1],
             "softmax": (softmax_w.T, softmax_b)}
    return out, sizes


def _char_cnn(path: str, state: dict, out: dict, used: set
              ) -> tuple[int, list]:
    """The char table and convolutions: ``(char_dim, filters)``, bilm-tf's
    ``[[width, number], ...]``."""
    char_table = state[CHAR_TABLE]
    if char_table.ndim != 2 or char_table.shape[0] != N_CHARACTERS:
        raise PaddleFormatError(
            f"{path}: {CHAR_TABLE}: expected shape ({N_CHARACTERS}, "
            f"char_dim) (PaddleNLP's char ids), found {char_table.shape}")
    dim_c = char_table.shape[1]
    used.add(CHAR_TABLE)
    convs = {}
    for key in state:
        if m := _CONV.match(key):
            convs.setdefault(int(m[1]), {})[m[2]] = key
    if not convs:
        raise PaddleFormatError(
            f"{path}: {EMBEDDER}cnn_layer_0.weight: expected the char-CNN's "
            f"convolutions, found none (parameters: "
            f"{name_list(sorted(state))})")
    n_conv = _numbered(path, convs, EMBEDDER + "cnn_layer_N")
    out[CHAR_EMBED] = char_table[1:]  # bilm-tf's file: no padding row
    filters = []
    for i in range(n_conv):
        key = f"{EMBEDDER}cnn_layer_{i}.weight"
        if key not in state or state[key].ndim != 4 \
                or state[key].shape[1:3] != (dim_c, 1):
            found = tuple(state[key].shape) if key in state else "none"
            raise PaddleFormatError(
                f"{path}: {key}: expected shape (filters, {dim_c}, 1, "
                f"width) (a Conv2D over {dim_c}-dim chars), found {found}")
        num, _, _, width = state[key].shape
        bias = _expect(path, state, f"{EMBEDDER}cnn_layer_{i}.bias", (num,),
                       f"{num} filters")
        # Paddle's [filters, char_dim, 1, width] -> bilm-tf's
        # [1, width, char_dim, filters]
        out[conv_kernel(i)] = np.transpose(state[key], (2, 3, 1, 0))
        out[conv_bias(i)] = bias
        filters.append([int(width), int(num)])
        used.update((key, f"{EMBEDDER}cnn_layer_{i}.bias"))
    return dim_c, filters


def _lstm_sizes(path: str, state: dict) -> tuple[int, int]:
    """``(n_layers, projection_dim)``: the layers each direction has (the
    same number) and the hidden size of the first."""
    lstms = {d: {} for d in _DIRECTIONS}
    for key in state:
        if m := _LSTM.match(key):
            lstms[m[1]].setdefault(int(m[2]), set()).add(key)
    if not lstms["forward"]:
        raise PaddleFormatError(
            f"{path}: _elmobilm.forward_lstm_layer_0.weight_hh_l0: expected "
            f"the biLM's LSTMs, found none (parameters: "
            f"{name_list(sorted(state))})")
    n_layers = _numbered(path, lstms["forward"],
                         "_elmobilm.forward_lstm_layer_N")
    n_back = len(lstms["backward"]) and _numbered(
        path, lstms["backward"], "_elmobilm.backward_lstm_layer_N")
    if n_back != n_layers:
        raise PaddleFormatError(
            f"{path}: _elmobilm.backward_lstm_layer_N: expected {n_layers} "
            f"layers (as forward), found {n_back}")
    first = "_elmobilm.forward_lstm_layer_0."
    hh = state.get(first + "weight_hh_l0",
                   state.get(first + "0.cell.weight_hh"))
    if hh is None or hh.ndim != 2:
        raise PaddleFormatError(
            f"{path}: {first}weight_hh_l0: expected shape (4 x P, P), found "
            f"{'none' if hh is None else tuple(hh.shape)}")
    return n_layers, hh.shape[1]


def _highways_and_projection(path: str, state: dict, n_filters: int,
                             dim_p: int, out: dict, used: set) -> int:
    """The highway layers (their number returned) and, where the filters
    are more than ``dim_p``, the projection down to it."""
    highways = {}
    for key in state:
        if m := _HIGHWAY.match(key):
            highways.setdefault(int(m[2]), set()).add(key)
    n_highway = _numbered(path, highways, EMBEDDER + "_highway_layer.N")
    why = f"a highway over {n_filters} filters"
    for i in range(n_highway):
        for part in HIGHWAY_PARTS:
            p = f"{EMBEDDER}_highway_layer.{part}_linear_{i}."
            # nn.Linear stores [in, out], as bilm-tf's W_carry/W_transform
            out[highway_kernel(i, part)] = _expect(
                path, state, p + "weight", (n_filters, n_filters), why)
            out[highway_bias(i, part)] = _expect(
                path, state, p + "bias", (n_filters,), why)
            used.update((p + "weight", p + "bias"))
    if n_filters != dim_p:  # PaddleNLP projects only then
        for part, dataset, shape in (
                ("weight", PROJECTION_KERNEL, (n_filters, dim_p)),
                ("bias", PROJECTION_BIAS, (dim_p,))):
            out[dataset] = _expect(
                path, state, PROJECTION + part, shape,
                f"{n_filters} filters projected to {dim_p}")
            used.add(PROJECTION + part)
    return n_highway


def _lstm_weights(path: str, state: dict, n_layers: int, dim_p: int,
                  moment: bool, out: dict, used: set) -> None:
    """Each direction's LSTM layers as bilm-tf's ``W_0`` and ``B``. The
    gates are reordered, and the forget bias shifted unless ``moment``."""
    for d, direction in enumerate(_DIRECTIONS):
        for layer in range(n_layers):
            prefix = f"_elmobilm.{direction}_lstm_layer_{layer}."
            a = _lstm_arrays(path, state, prefix, dim_p)
            used.update(prefix + n for names in _LSTM_PARAMS.values()
                        for n in names)
            p = lstm_hdf5_prefix(d, layer)
            # TF1 multiplies [x, h] by one (in + P, 4P) kernel; Paddle's
            # gate blocks are (i, f, g, o) along axis 0
            out[f"{p}/{LSTM_KERNEL}"] = np.concatenate(
                [to_tf1_gates(a["weight_ih"], "ifjo", axis=0).T,
                 to_tf1_gates(a["weight_hh"], "ifjo", axis=0).T])
            bias = to_tf1_gates(a["bias_ih"] + a["bias_hh"], "ifjo")
            out[f"{p}/{LSTM_BIAS}"] = (bias if moment
                                       else without_forget_bias(bias))


def _softmax(path: str, state: dict, dim_p: int, used: set
             ) -> tuple[np.ndarray, np.ndarray]:
    """The pre-train model's softmax: ``(W (dim_p, vocabulary), b)``."""
    softmax_w = state.get(SOFTMAX + "weight")
    if softmax_w is None or softmax_w.ndim != 2 or softmax_w.shape[0] != dim_p:
        raise PaddleFormatError(
            f"{path}: {SOFTMAX}weight: expected shape ({dim_p}, vocabulary) "
            "(the pre-train model's softmax), found "
            f"{'none' if softmax_w is None else tuple(softmax_w.shape)}")
    n_vocab = softmax_w.shape[1]
    softmax_b = _expect(path, state, SOFTMAX + "bias", (n_vocab,),
                        f"a softmax over {n_vocab} words")
    used.update((SOFTMAX + "weight", SOFTMAX + "bias"))
    return softmax_w, softmax_b


def paddlenlp_options(sizes: dict) -> dict:
    """The ``options.json`` of a converted PaddleNLP model."""
    return {
        "lstm": {
            # nn.LSTM(hidden_size=projection_dim): no cell projection
            "dim": sizes["projection_dim"],
            "projection_dim": sizes["projection_dim"],
            "n_layers": sizes["n_layers"],
            "use_skip_connections": False,
        },
        "char_cnn": {
            "embedding": {"dim": sizes["char_dim"]},
            "filters": sizes["filters"],
            "n_highway": sizes["n_highway"],
            "n_characters": N_CHARACTERS,
            "max_characters_per_token": MAX_CHARACTERS_PER_TOKEN,
            "activation": "relu",
        },
        "bidirectional": True,
        "n_tokens_vocab": sizes["n_vocab"],
        **TRAINING_DEFAULTS,
        # PaddleNLP's training carries states from batch to batch
        "reset_states_at_sentence_start": False,
    }


def read_paddlenlp_vocab(path: str | os.PathLike, n_vocab: int,
                         source: str) -> list[str]:
    """``vocab.txt`` lines (the four specials, then the file's words) of a
    PaddleNLP vocabulary file, checked as PaddleNLP checks it and against
    the softmax's size."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            words = [line.strip() for line in f]
    except FileNotFoundError:
        raise PaddleFormatError(f"{path}: vocabulary file not found") \
            from None
    except UnicodeDecodeError as e:
        raise PaddleFormatError(f"{path}: expected UTF-8 text, found byte "
                                f"{e.object[e.start]:#x} at {e.start}") \
            from None
    seen = {"UNK", *SPECIAL_TOKENS[1:]}
    for n, word in enumerate(words, 1):
        if word in seen:  # PaddleNLP's Vocabulary refuses these too
            raise PaddleFormatError(
                f"{path}: line {n}: expected a word not already in the "
                f"vocabulary (PaddleNLP adds UNK, <S>, </S>, <PAD>), found "
                f"{word!r} again")
        if word in ("<UNK>", "!!!MAXTERMID"):
            raise PaddleFormatError(
                f"{path}: line {n}: expected a word, found {word!r}, which "
                "bilm-tf's vocabulary reads as a special entry")
        seen.add(word)
    if len(SPECIAL_TOKENS) + len(words) != n_vocab:
        raise PaddleFormatError(
            f"{path}: lines: expected {n_vocab - len(SPECIAL_TOKENS)} words "
            f"({source} has a softmax over {n_vocab} = "
            f"{len(SPECIAL_TOKENS)} specials + words), found {len(words)}")
    return list(SPECIAL_TOKENS) + words


def pdopt_path(path: str) -> str:
    """The ``.pdopt`` that ``run_pretrain.py`` saves beside a
    ``.pdparams`` (its optimizer's state)."""
    root, ext = os.path.splitext(path)
    return (root if ext == PDPARAMS_SUFFIX else path) + PDOPT_SUFFIX


def read_paddlenlp_accumulators(path: str, state: dict
                                ) -> dict[str, np.ndarray]:
    """Adagrad's accumulators of the ``.pdopt`` beside ``path``, the
    ``.pdparams`` whose arrays are ``state``.

    They come in bilm-tf's layout under ``lm_weights``' keys, plus
    ``softmax/W`` and ``softmax/b``. They are empty where there is no
    ``.pdopt``.

    The ``.pdopt`` names each accumulator ``<parameter>_moment_0`` by the
    parameter's internal name (``lstm_cell_0.w_0``). The ``.pdparams``'
    ``StructuredToParameterName@@`` maps that to its structured one. The
    frozen ``bias_hh`` is not trained and has none, so a bias's
    accumulator is ``bias_ih``'s.

    Raises:
        PaddleFormatError: a ``.pdopt`` that is not a ``.pdparams``-style
            pickle, lacks an accumulator, or holds one of another shape.
    """
    opt_path = pdopt_path(path)
    if not os.path.isfile(opt_path):
        return {}
    names = state.get(STRUCTURED_NAMES_KEY)
    if not isinstance(names, dict):
        logger.warning(
            "%s: no %s in %s to tell which accumulator is whose: Adagrad's "
            "accumulators not read", opt_path, STRUCTURED_NAMES_KEY, path)
        return {}
    try:
        moments = read_pdparams(opt_path)
    except PdparamsError as e:
        raise PaddleFormatError(str(e)) from None
    structured = {}
    for key, value in state.items():
        if key == STRUCTURED_NAMES_KEY \
                or key.endswith(("bias_hh", "bias_hh_l0")):
            continue  # frozen: no accumulator
        moment = f"{names.get(key, key)}{MOMENT_SUFFIX}"
        if moment not in moments:
            raise PaddleFormatError(
                f"{opt_path}: {moment}: expected the Adagrad accumulator of "
                f"{key} (shape {tuple(value.shape)}), found none")
        found = moments[moment]
        if not isinstance(found, np.ndarray) \
                or tuple(found.shape) != tuple(value.shape):
            raise PaddleFormatError(
                f"{opt_path}: {moment}: expected shape {tuple(value.shape)} "
                f"(as {key}), found "
                f"{getattr(found, 'shape', type(found).__name__)}")
        structured[key] = found.astype(np.float32, copy=False)
    accumulators, sizes = _bilm_tf_datasets(opt_path, structured,
                                            moment=True)
    softmax_w, softmax_b = sizes["softmax"]
    accumulators[SOFTMAX_W_KEY] = softmax_w
    accumulators[SOFTMAX_B_KEY] = softmax_b
    return accumulators


class LazyAccumulators(collections.abc.Mapping):
    """The accumulators of :func:`read_paddlenlp_accumulators`, read from
    the ``.pdopt`` on first use: converting a model never reads its
    optimizer's state (as large as the weights), continuing a run does.

    Raises (on first use):
        PaddleFormatError: see :func:`read_paddlenlp_accumulators`.
    """

    def __init__(self, path: str, state: dict):
        self._path = path
        self._state = state
        self._loaded: dict | None = None

    def _arrays(self) -> dict:
        if self._loaded is None:
            self._loaded = {
                k: v if k == SOFTMAX_W_KEY else np.ascontiguousarray(v)
                for k, v in read_paddlenlp_accumulators(
                    self._path, self._state).items()}
            self._state = None  # no longer needed
        return self._loaded

    def __getitem__(self, key):
        return self._arrays()[key]

    def __iter__(self):
        return iter(self._arrays())

    def __len__(self):
        return len(self._arrays())

    def __repr__(self):
        state = "read" if self._loaded is not None else "not read yet"
        return f"LazyAccumulators({pdopt_path(self._path)!r}, {state})"


def read_paddlenlp(path: str | os.PathLike,
                   vocab_file: str | os.PathLike | None = None
                   ) -> PaddleModel:
    """A PaddleNLP ELMo ``.pdparams`` as a :class:`PaddleModel`.

    Adagrad's accumulators come from the ``.pdopt`` beside ``path`` where
    there is one, read on first use (:class:`LazyAccumulators`).

    Args:
        path: the ``.pdparams`` file ``run_pretrain.py`` saved.
        vocab_file: PaddleNLP's vocabulary file, words only, as its
            ``--vocab_file``. With None the model has no ``vocab``.

    Raises:
        PaddleFormatError: in one line, a file that is not a PaddleNLP
            ELMo ``.pdparams``, a missing key, a shape that does not fit,
            or a vocabulary of another size. A pickle holding code is
            refused before it runs.
    """
    path = os.fspath(path)
    try:
        state = read_pdparams(path)
    except PdparamsError as e:
        raise PaddleFormatError(str(e)) from None
    if not is_paddlenlp_state(state):
        names = [k for k in state if k != STRUCTURED_NAMES_KEY]
        raise PaddleFormatError(
            f"{path}: {CHAR_TABLE}: expected PaddleNLP's ELMo (its char "
            f"table), found another model's parameters: "
            f"{name_list(sorted(names))}")
    for key, value in state.items():
        if key == STRUCTURED_NAMES_KEY:
            continue
        if not isinstance(value, np.ndarray) \
                or not np.issubdtype(value.dtype, np.floating):
            found = (value.dtype if isinstance(value, np.ndarray)
                     else type(value).__name__)
            raise PaddleFormatError(
                f"{path}: {key}: expected a floating-point array, found "
                f"{found}")
    state = {k: (v if k == STRUCTURED_NAMES_KEY
                 else v.astype(np.float32, copy=False))
             for k, v in state.items()}
    lm_weights, sizes = _bilm_tf_datasets(path, state)
    softmax_weight, softmax_bias = sizes.pop("softmax")
    accumulators = {}
    with_pdopt = os.path.isfile(pdopt_path(path))
    if with_pdopt:
        accumulators = LazyAccumulators(path, dict(state))
    vocab = None
    if vocab_file is not None:
        vocab = read_paddlenlp_vocab(vocab_file, sizes["n_vocab"], path)
    logger.info(
        "%s: PaddleNLP ELMo, %d filters, %d highways, %d x 2 LSTMs of %d, "
        "softmax over %d%s", path, sum(n for _, n in sizes["filters"]),
        sizes["n_highway"], sizes["n_layers"], sizes["projection_dim"],
        sizes["n_vocab"],
        f", Adagrad accumulators in {pdopt_path(path)}"
        if with_pdopt else "")
    return PaddleModel(
        source=path, system="paddlenlp", options=paddlenlp_options(sizes),
        lm_weights={k: np.ascontiguousarray(v, np.float32)
                    for k, v in lm_weights.items()},
        # (V, P) as a view of the file's (P, V): a released model's is 300
        # MB, and converting does not write it
        softmax_weight=softmax_weight,
        softmax_bias=softmax_bias, vocab=vocab,
        accumulators=accumulators)
