"""PaddlePaddle's Fluid ELMo, the Chinese "baike" model, in bilm-tf's terms.

Upstream's model, PaddlePaddle/models ``PaddleNLP/ELMO/lm_model.py``, is a
word-input biLM.

* One embedding ``embedding_para`` `(V, P)` serves both directions.
* Each direction has two layers. Each is an fc without bias,
  ``{fw,bw}_layer{1,2}_gate_w`` `(P, 4D)`, into ``dynamic_lstmp``. That
  has D cells and projection P, no peepholes, cell and projection
  clipped at 3, and projection activation identity.
* Fluid names the parameters by creation order. ``lstmp_0`` and
  ``lstmp_1`` are the forward layers 1 and 2, ``lstmp_2`` and
  ``lstmp_3`` the backward ones. In each, ``.w_0`` `(P, 4D)` is
  recurrent on the clipped projection, ``.w_1`` `(D, P)` is the
  projection and ``.b_0`` is `(1, 4D)`.
* Layer 2 adds its input, a residual.
* One softmax has ``softmax_weight`` `(V, P)` and ``softmax_bias``
  `(V,)`.

The backward direction is done in the data, as bilm-tf does: ``</S>``,
the words reversed, ``<S>``.

Paddle's ``lstmp`` kernel differs from bilm-tf's TF1 ``LSTMCell`` as
follows. Each point is checked against Paddle 1.8.5's own kernel in
``tests/fixtures/paddle_baike/``.

* Paddle's gate blocks are in the order candidate, input, forget,
  output. TF1's are input, candidate ``j``, forget, output. So the
  columns are reordered.
* Paddle has no forget-bias constant. TF1's cell adds 1.0, so it is
  subtracted from the bias.
* TF1 multiplies ``[x, m_prev]`` by one kernel. So the fc weight of x
  and ``w_0``, on the previous clipped projection, are stacked into
  ``W_0``. ``w_1`` is ``W_P_0``. The clips act in the same places. The
  cell is clipped before its tanh and carried clipped. The projection
  is clipped, then fed back.
* Paddle's CPU sigmoid clamps its input to [-40, 13], and TensorFlow's
  does not. A gate pre-activation past 13 moves a gate by at most
  2.3e-6.

The clips and dropout are attributes of upstream's program, not of the
checkpoint. The values upstream's ``args.py`` defaults to, with which the
released model was trained, are written into ``options.json``.
"""

from __future__ import annotations

import logging
import os
from typing import Dict, List, Optional

import numpy as np

from bilm_keras._utils.problem_list import name_list
from bilm_keras.data.vocabulary import Vocabulary, VocabularyError
from bilm_keras.weights.bilm_tf_names import (
    LSTM_BIAS,
    LSTM_KERNEL,
    LSTM_PROJECTION,
    TOKEN_EMBEDDING,
    lstm_hdf5_prefix,
    to_tf1_gates,
    without_forget_bias,
    SOFTMAX_B_KEY,
    SOFTMAX_W_KEY,
)
from bilm_keras.weights.model_detection import (
    BAIKE_FILES,
    is_baike_checkpoint,
)
from bilm_keras.weights.paddle_model import PaddleFormatError, PaddleModel
from bilm_keras.weights.paddle_persistables import (
    TensorHeader,
    list_variables,
    read_data,
    read_headers,
)

logger = logging.getLogger(__name__)

SYSTEM = "fluid-baike"
EMBEDDING = BAIKE_FILES[0]
SOFTMAX_WEIGHT = "softmax_weight"
SOFTMAX_BIAS = "softmax_bias"
#: Adagrad's accumulator of a parameter: ``<name>_moment_0``
MOMENT_SUFFIX = "_moment_0"
#: (direction, layer) -> (fc weight, lstmp prefix); HDF5 direction index
LAYERS = {
    (0, 0): ("fw_layer1_gate_w", "lstmp_0"),
    (0, 1): ("fw_layer2_gate_w", "lstmp_1"),
    (1, 0): ("bw_layer1_gate_w", "lstmp_2"),
    (1, 1): ("bw_layer2_gate_w", "lstmp_3"),
}
PARAMETERS = (
    [EMBEDDING, SOFTMAX_WEIGHT, SOFTMAX_BIAS]
    + [gate for gate, _ in LAYERS.values()]
    + [f"{lstmp}.{w}" for _, lstmp in LAYERS.values()
       for w in ("w_0", "w_1", "b_0")]
)
#: upstream args.py defaults (the released model's training settings)
CELL_CLIP = 3.0
PROJ_CLIP = 3.0
DROPOUT = 0.1
UNROLL_STEPS = 20
BATCH_SIZE = 128
LEARNING_RATE = 0.2
MAX_GRAD_NORM = 10.0
#: the vocabulary a checkpoint folder may carry beside its variables
VOCAB_NAMES = ("vocab.txt", "vocabulary_min5k.txt")


def _check_shapes(dirname: str, headers: Dict[str, TensorHeader]) -> tuple:
    """(V, P, D) from the headers, every shape and dtype checked."""
    for h in headers.values():
        if h.type_name != "FP32":
            raise PaddleFormatError(
                f"{h.path}: data type: expected FP32 (a baike parameter), "
                f"found {h.type_name}")
        if h.lod:
            raise PaddleFormatError(
                f"{h.path}: lod_level: expected 0 (a parameter has no "
                f"LoD), found {len(h.lod)}")
    emb = headers[EMBEDDING]
    if len(emb.shape) != 2 or 0 in emb.shape:
        raise PaddleFormatError(
            f"{emb.path}: dims: expected (vocabulary, projection), found "
            f"{emb.shape}")
    n_vocab, dim_p = emb.shape
    gate = headers["fw_layer1_gate_w"]
    if len(gate.shape) != 2 or gate.shape[1] % 4 or not gate.shape[1]:
        raise PaddleFormatError(
            f"{gate.path}: dims: expected ({dim_p}, 4 x cells), found "
            f"{gate.shape}")
    dim_d = gate.shape[1] // 4
    expected = {EMBEDDING: (n_vocab, dim_p),
                SOFTMAX_WEIGHT: (n_vocab, dim_p),
                SOFTMAX_BIAS: (n_vocab,)}
    for gate_name, lstmp in LAYERS.values():
        expected[gate_name] = (dim_p, 4 * dim_d)
        expected[f"{lstmp}.w_0"] = (dim_p, 4 * dim_d)
        expected[f"{lstmp}.w_1"] = (dim_d, dim_p)
        expected[f"{lstmp}.b_0"] = (1, 4 * dim_d)
    for name, shape in expected.items():
        found = headers[name].shape
        if found != shape and not (name == SOFTMAX_BIAS
                                   and found == (n_vocab, 1)):
            raise PaddleFormatError(
                f"{headers[name].path}: dims: expected {shape} (vocabulary "
                f"{n_vocab}, projection {dim_p}, cells {dim_d} from "
                f"{EMBEDDING} and fw_layer1_gate_w), found {found}")
    return n_vocab, dim_p, dim_d


def baike_options(n_vocab: int, dim_p: int, dim_d: int) -> dict:
    """The ``options.json`` of a converted baike model (word input)."""
    return {
        "lstm": {
            "dim": dim_d,
            "projection_dim": dim_p,
            "n_layers": 2,
            "cell_clip": CELL_CLIP,
            "proj_clip": PROJ_CLIP,
            # upstream adds layer 2's input to its output
            "use_skip_connections": True,
        },
        "bidirectional": True,
        "n_tokens_vocab": n_vocab,
        "token_embedding_dim": dim_p,
        "dropout": DROPOUT,
        "unroll_steps": UNROLL_STEPS,
        "batch_size": BATCH_SIZE,
        "learning_rate": LEARNING_RATE,
        "all_clip_norm_val": MAX_GRAD_NORM,
        # upstream's training and evaluation carry states across batches
        "reset_states_at_sentence_start": False,
    }


def _converted(arrays: Dict[str, np.ndarray], *, moment: bool
               ) -> Dict[str, np.ndarray]:
    """bilm-tf's datasets from Paddle's parameters (or their Adagrad
    accumulators: the same moves, no forget-bias shift)."""
    out = {TOKEN_EMBEDDING: arrays[EMBEDDING]}
    for (d, layer), (gate_name, lstmp) in LAYERS.items():
        p = lstm_hdf5_prefix(d, layer)
        # TF1 multiplies [x, m_prev] by one kernel; Paddle's gate blocks
        # are (c, i, f, o), c TF1's candidate j
        out[f"{p}/{LSTM_KERNEL}"] = to_tf1_gates(np.concatenate(
            [arrays[gate_name], arrays[f"{lstmp}.w_0"]], axis=0), "jifo")
        bias = to_tf1_gates(arrays[f"{lstmp}.b_0"].reshape(-1), "jifo")
        # TF1's cell adds a forget bias, Paddle's does not
        out[f"{p}/{LSTM_BIAS}"] = (bias if moment
                                   else without_forget_bias(bias))
        out[f"{p}/{LSTM_PROJECTION}"] = arrays[f"{lstmp}.w_1"]
    return out


def read_vocab(path: str, n_vocab: int, source: str) -> List[str]:
    """The vocabulary's words in id order, checked against the table."""
    try:
        vocab = Vocabulary(path, validate_file=True)
    except VocabularyError as e:
        raise PaddleFormatError(str(e)) from None
    except UnicodeDecodeError as e:
        raise PaddleFormatError(
            f"{path}: expected UTF-8 text, found byte {e.object[e.start]:#x} "
            f"at offset {e.start}") from None
    if vocab.size != n_vocab:
        raise PaddleFormatError(
            f"{path}: lines: expected {n_vocab} words ({source} has "
            f"{n_vocab} rows), found {vocab.size}")
    return [vocab.id_to_word(i) for i in range(vocab.size)]


def _own_vocab(dirname: str) -> Optional[str]:
    for name in VOCAB_NAMES:
        path = os.path.join(dirname, name)
        if os.path.isfile(path):
            return path
    return None


def baike_checkpoint_options(dirname: str | os.PathLike) -> dict:
    """The ``options.json`` of a baike checkpoint from its variables'
    headers alone (no weight is read).

    Raises:
        PaddleFormatError: see :func:`read_baike`.
    """
    dirname = os.fspath(dirname)
    names = list_variables(dirname)
    missing = [n for n in PARAMETERS if n not in names]
    if not is_baike_checkpoint(names) or missing:
        read_baike(dirname)  # raises the one-line error
    n_vocab, dim_p, dim_d = _check_shapes(
        dirname, read_headers(dirname, PARAMETERS))
    return baike_options(n_vocab, dim_p, dim_d)


def read_baike(dirname: str | os.PathLike,
               vocab_file: Optional[str | os.PathLike] = None
               ) -> PaddleModel:
    """A Fluid ELMo ``save_persistables`` directory as a
    :class:`PaddleModel`.

    Args:
        dirname: the checkpoint directory, one file per variable.
        vocab_file: its vocabulary, ``vocabulary_min5k.txt`` for the
            released model. The default is a ``vocab.txt`` or
            ``vocabulary_min5k.txt`` inside ``dirname``, else none.

    Raises:
        PaddleFormatError: not a baike checkpoint, naming the directory
            and a few variables. Or a missing, cut-short or malformed
            variable file, a shape that does not fit, or a vocabulary of
            another size. Every header and the vocabulary are checked
            before the weights are read.
    """
    dirname = os.fspath(dirname)
    names = list_variables(dirname)
    if not is_baike_checkpoint(names):
        raise PaddleFormatError(
            f"{dirname}: expected a Fluid ELMo (baike) checkpoint "
            f"({EMBEDDING}, fw_layer1_gate_w, lstmp_0.w_0, ...), found "
            f"{name_list(names, empty='no files')}")
    missing = [n for n in PARAMETERS if n not in names]
    if missing:
        raise PaddleFormatError(
            f"{os.path.join(dirname, missing[0])}: expected the baike "
            f"model's variable, found no such file"
            + (f" (nor {name_list(missing[1:], most=3)})"
               if len(missing) > 1 else ""))
    headers = read_headers(dirname, PARAMETERS)
    n_vocab, dim_p, dim_d = _check_shapes(dirname, headers)

    moments = [n + MOMENT_SUFFIX for n in PARAMETERS]
    present = [m for m in moments if m in names]
    if present and len(present) != len(moments):
        absent = [m for m in moments if m not in names]
        raise PaddleFormatError(
            f"{os.path.join(dirname, absent[0])}: expected every "
            f"parameter's Adagrad accumulator (the checkpoint holds "
            f"{len(present)} of {len(moments)}), found no such file")
    moment_headers = read_headers(dirname, present)
    for m, h in moment_headers.items():
        want = headers[m[:-len(MOMENT_SUFFIX)]]
        if h.shape != want.shape or h.type_name != want.type_name:
            raise PaddleFormatError(
                f"{h.path}: dims: expected {want.shape} {want.type_name} "
                f"(its parameter's), found {h.shape} {h.type_name}")

    vocab = None
    vocab_path = (os.fspath(vocab_file) if vocab_file is not None
                  else _own_vocab(dirname))
    if vocab_path is not None:
        vocab = read_vocab(vocab_path, n_vocab,
                           os.path.join(dirname, EMBEDDING))

    arrays = {n: read_data(h) for n, h in headers.items()}
    lm_weights = _converted(arrays, moment=False)
    accumulators = {}
    if present:
        m_arrays = {m[:-len(MOMENT_SUFFIX)]: read_data(h)
                    for m, h in moment_headers.items()}
        accumulators = _converted(m_arrays, moment=True)
        accumulators[SOFTMAX_W_KEY] = m_arrays[SOFTMAX_WEIGHT]
        accumulators[SOFTMAX_B_KEY] = m_arrays[SOFTMAX_BIAS].reshape(-1)
    logger.debug("read a Fluid ELMo checkpoint from %s: %d words, %d cells, "
                "projection %d%s", dirname, n_vocab, dim_d, dim_p,
                ", Adagrad accumulators" if present else "")
    return PaddleModel(
        source=dirname, system=SYSTEM,
        options=baike_options(n_vocab, dim_p, dim_d),
        lm_weights=lm_weights,
        softmax_weight=arrays[SOFTMAX_WEIGHT],
        softmax_bias=arrays[SOFTMAX_BIAS].reshape(-1),
        vocab=vocab, accumulators=accumulators)
