"""bilm-tf's names for its weights in every generation, and its LSTM cell's
gate order and forget bias: the one home of this knowledge, pure Python.

bilm-tf's HDF5 file (``lm_weights.hdf5``) names each weight by a dataset
path. Every converter writes these datasets, and every reader of a TF1
graph maps its variables onto them. The char-CNN and the softmax keep
their names in every TF1 graph. An LSTM variable's name depends on the
TensorFlow that built the graph:

====================  =====================================================
generation            the forward direction's first layer's kernel
====================  =====================================================
the HDF5 datasets     ``RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0``
:data:`TF_1_2`        the same, in every TF 1.2 graph
:data:`TF_1_5`        ``RNN_0/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel``
:data:`TF_1_5_MODEL`  ``RNN_0/RNN/MultiRNNCell/Cell0/rnn/lstm_cell/kernel``
====================  =====================================================

:data:`TF_1_5` is a training graph of TF 1.5 or later, ``static_rnn``
under ``RNN_k``: bilm-tf's ``train()`` and DeepPavlov's ELMo trainer both
build it. :data:`TF_1_5_MODEL` is the inference graph of bilm-tf's
``BidirectionalLanguageModel``, ``dynamic_rnn`` under
``RNN_k/RNN/MultiRNNCell/CellN``, and so that of the TF1 Hub modules made
from it. A graph puts its own scope in front: ``lm/`` for a training
checkpoint, ``bilm/`` for the inference graph.

TF1's ``LSTMCell`` multiplies ``[x, h]`` by one kernel ``W_0`` with the
gate blocks in the order :data:`GATE_ORDER`, and adds
:data:`TF_FORGET_BIAS` to the forget gate's logits.

Example:
    >>> lstm_hdf5_prefix(1, 0) + "/" + LSTM_PROJECTION
    'RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0'
    >>> tf1_name("RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0", TF_1_5)
    'RNN_1/rnn/multi_rnn_cell/cell_0/lstm_cell/projection/kernel'
    >>> tf1_name("RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/B", TF_1_5_MODEL)
    'RNN_0/RNN/MultiRNNCell/Cell1/rnn/lstm_cell/bias'
    >>> checkpoint_name("CNN/W_cnn_0", TF_1_5)
    'lm/CNN/W_cnn_0'
    >>> lstm_generation(["lm/RNN_0/rnn/multi_rnn_cell/cell_0/lstm_cell/bias"])
    'tf>=1.5'
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, Optional, Sequence, Tuple

if TYPE_CHECKING:  # numpy is imported where a gate is moved: a command
    import numpy as np  # that only detects a model's family needs none

# ------------------------------------------------------ the HDF5 datasets
#: the char table, without the padding row of the +1-shifted ids
CHAR_EMBED = "char_embed"
#: a token-input model's table, without a padding row
TOKEN_EMBEDDING = "embedding"
#: an ELMoForManyLangs model's word table, converted
WORD_EMBED = "word_embed"
#: the char-CNN's projection, ``(filters, projection_dim)``
PROJECTION_KERNEL = "CNN_proj/W_proj"
PROJECTION_BIAS = "CNN_proj/b_proj"
#: a highway layer's two halves, ``W_carry`` and ``W_transform``
HIGHWAY_PARTS = ("carry", "transform")
#: the char-CNN's scope: its convolutions, and in a TF1 graph its ops
#: (``CNN/MaxPool``, ``CNN/Relu``)
CNN_SCOPE = "CNN/"
#: the softmax's weights and bias, under a graph's scope (``lm/`` in a
#: training checkpoint); Paddle's readers name their softmax so too
SOFTMAX_W_KEY = "softmax/W"
SOFTMAX_B_KEY = "softmax/b"
#: the leaves of an LSTM group: ``[x, h] @ W_0 + B``, then ``@ W_P_0``
LSTM_KERNEL = "W_0"
LSTM_BIAS = "B"
LSTM_PROJECTION = "W_P_0"


def conv_kernel(i: int) -> str:
    """The ``i``-th convolution's kernel, ``(1, width, char_dim, filters)``.

    Example:
        >>> conv_kernel(2)
        'CNN/W_cnn_2'
    """
    return f"{CNN_SCOPE}W_cnn_{i}"


def conv_bias(i: int) -> str:
    """The ``i``-th convolution's bias, ``(filters,)``."""
    return f"{CNN_SCOPE}b_cnn_{i}"


def highway_kernel(k: int, part: str) -> str:
    """Highway layer ``k``'s kernel of ``part``, one of
    :data:`HIGHWAY_PARTS`.

    Example:
        >>> highway_kernel(0, "carry")
        'CNN_high_0/W_carry'
    """
    return f"CNN_high_{k}/W_{part}"


def highway_bias(k: int, part: str) -> str:
    """Highway layer ``k``'s bias of ``part``, one of :data:`HIGHWAY_PARTS`."""
    return f"CNN_high_{k}/b_{part}"


def lstm_cell_scope(direction: int, layer: int) -> str:
    """The scope of one LSTM layer in bilm-tf's inference graph and the
    HDF5 file, 0 the forward direction: its ops and its variables are
    under it.

    Example:
        >>> lstm_cell_scope(0, 1)
        'RNN_0/RNN/MultiRNNCell/Cell1/'
    """
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/"


def lstm_hdf5_prefix(direction: int, layer: int) -> str:
    """The HDF5 group of one LSTM layer, 0 the forward direction.

    Example:
        >>> lstm_hdf5_prefix(0, 1)
        'RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell'
    """
    return lstm_cell_scope(direction, layer) + "LSTMCell"


# -------------------------------------------------- the TF1 graphs' names
#: a TF 1.2 graph: the LSTM variables have the datasets' names
TF_1_2 = "tf1.2"
#: a training graph of TF >= 1.5: bilm-tf's ``train()``, DeepPavlov's
TF_1_5 = "tf>=1.5"
#: bilm-tf's inference graph under TF >= 1.5, as in its TF1 Hub modules
TF_1_5_MODEL = "tf>=1.5 model"
GENERATIONS = (TF_1_5, TF_1_2, TF_1_5_MODEL)

#: the scope of bilm-tf's training graph
LM_SCOPE = "lm/"
SOFTMAX_SCOPE = LM_SCOPE + "softmax/"
SOFTMAX_W = LM_SCOPE + SOFTMAX_W_KEY
SOFTMAX_B = LM_SCOPE + SOFTMAX_B_KEY
#: Adagrad's slot: ``<variable name>/Adagrad``
ADAGRAD_SUFFIX = "/Adagrad"
#: what bilm-tf's ``AdagradOptimizer(initial_accumulator_value=1.0)``
#: accumulators start from, and so the padding rows our tables add
INITIAL_ACCUMULATOR = 1.0
#: bilm-tf's batch counter, a float32
GLOBAL_STEP = "global_step"

#: an LSTM variable's name in each generation, ``RNN_k`` and the
#: multi-cell scope optional as in a one-layer or one-direction graph
_LSTM_NAME = {
    TF_1_5: r"(RNN_\d+/)?rnn/(multi_rnn_cell/cell_\d+/)?lstm_cell/",
    TF_1_2: r"(RNN_\d+/)?RNN/(MultiRNNCell/Cell\d+/)?LSTMCell/",
    TF_1_5_MODEL: r"RNN_\d+/RNN/MultiRNNCell/Cell\d+/rnn/lstm_cell/",
}
#: a TF >= 1.5 cell's leaves by the datasets' leaves
_TF_1_5_LEAF = {LSTM_KERNEL: "kernel", LSTM_BIAS: "bias",
                LSTM_PROJECTION: "projection/kernel"}
_LSTM_DATASET = re.compile(r"RNN_(\d+)/RNN/MultiRNNCell/Cell(\d+)/LSTMCell/"
                           r"(W_0|B|W_P_0)")


def tf1_name(dataset: str, generation: str) -> str:
    """The variable of a TF1 graph of ``generation`` that holds
    ``dataset``, without the graph's scope.

    bilm-tf's ``dump_weights`` renamed each variable to its dataset: this
    undoes it. Only the LSTM variables differ between generations.

    Raises:
        ValueError: ``generation`` is not one of :data:`GENERATIONS`.
    """
    if generation not in GENERATIONS:
        raise ValueError(f"generation: expected one of "
                         f"{', '.join(map(repr, GENERATIONS))}, found "
                         f"{generation!r}")
    lstm = _LSTM_DATASET.fullmatch(dataset)
    if generation == TF_1_2 or lstm is None:
        return dataset
    direction, layer, leaf = lstm.groups()
    if generation == TF_1_5:
        return (f"RNN_{direction}/rnn/multi_rnn_cell/cell_{layer}/"
                f"lstm_cell/{_TF_1_5_LEAF[leaf]}")
    return (f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/rnn/lstm_cell/"
            f"{_TF_1_5_LEAF[leaf]}")


def checkpoint_name(dataset: str, generation: str) -> str:
    """The variable of bilm-tf's training checkpoint that
    ``dump_weights`` wrote as ``dataset``.

    Example:
        >>> checkpoint_name("RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0",
        ...                 TF_1_5)
        'lm/RNN_1/rnn/multi_rnn_cell/cell_0/lstm_cell/projection/kernel'
        >>> checkpoint_name("CNN/W_cnn_0", TF_1_2)
        'lm/CNN/W_cnn_0'
    """
    return LM_SCOPE + tf1_name(dataset, generation)


_TF_1_5_VARIABLE = re.compile(
    r"RNN_(\d+)/rnn/multi_rnn_cell/cell_(\d+)/lstm_cell/"
    r"(kernel|bias|projection/kernel)")
_TF_1_5_DATASET_LEAF = {v: k for k, v in _TF_1_5_LEAF.items()}


def dataset_name(variable: str, generation: str) -> str:
    """The HDF5 dataset of a training checkpoint's ``variable`` (under
    :data:`LM_SCOPE`): what bilm-tf's ``dump_weights`` names it, the
    inverse of :func:`checkpoint_name`.

    Example:
        >>> dataset_name("lm/RNN_1/rnn/multi_rnn_cell/cell_0/lstm_cell/"
        ...              "projection/kernel", TF_1_5)
        'RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0'
        >>> dataset_name("lm/CNN_high_0/W_carry", TF_1_2)
        'CNN_high_0/W_carry'
    """
    if not variable.startswith(LM_SCOPE):
        raise ValueError(f"variable: expected a name under {LM_SCOPE!r}, "
                         f"found {variable!r}")
    name = variable[len(LM_SCOPE):]
    lstm = _TF_1_5_VARIABLE.fullmatch(name)
    if generation != TF_1_5 or lstm is None:
        return name
    direction, layer, leaf = lstm.groups()
    return (lstm_hdf5_prefix(int(direction), int(layer)) + "/"
            + _TF_1_5_DATASET_LEAF[leaf])


def lstm_generation(names: Iterable[str], scope: str = LM_SCOPE,
                    generations: Sequence[str] = GENERATIONS
                    ) -> Optional[str]:
    """The first of ``generations`` whose LSTM names are among ``names``,
    each name ``scope`` followed by the graph's own, or None.

    Example:
        >>> lstm_generation(["bilm/RNN_0/RNN/MultiRNNCell/Cell0/rnn/"
        ...                  "lstm_cell/kernel"], scope="bilm/")
        'tf>=1.5 model'
    """
    names = list(names)
    for generation in generations:
        pattern = re.compile(re.escape(scope) + _LSTM_NAME[generation])
        if any(pattern.match(name) for name in names):
            return generation
    return None


# ------------------------------------------- bilm-tf's inference graph
#: the scope of bilm-tf's inference graph (``BidirectionalLanguageModel``)
MODEL_SCOPE = "bilm/"
#: the LSTM state caches the inference graph keeps between calls,
#: ``tf.Variable``s `(max_batch_size, dim)` under its name scope (``bilm/``,
#: ``bilm_1/`` for a second call): state, not weights
STATE_CACHE = re.compile(r"^bilm(_\d+)?/Variable(_\d+)?$")
#: the scope of ``weight_layers``' mix
AGGREGATION_SCOPE = "aggregation/"


def elmo_mix_names(name: str) -> Tuple[str, str]:
    """The raw layer weights `(L,)` and the scale `(1,)` that
    ``weight_layers(name, ...)`` makes.

    Example:
        >>> elmo_mix_names("elmo_output")
        ('aggregation/elmo_output_ELMo_W', 'aggregation/elmo_output_ELMo_gamma')
    """
    return (f"{AGGREGATION_SCOPE}{name}_ELMo_W",
            f"{AGGREGATION_SCOPE}{name}_ELMo_gamma")


# ------------------------------------------------------- TF1's LSTM cell
#: TF1 ``LSTMCell``'s gate blocks along the kernel's columns: input, the
#: candidate ``j``, forget, output
GATE_ORDER = "ijfo"
#: TF1 ``LSTMCell`` adds this to the forget gate's logits
TF_FORGET_BIAS = 1.0


def to_tf1_gates(x: np.ndarray, order: str, axis: int = -1) -> np.ndarray:
    """``x``'s four gate blocks along ``axis`` put in TF1's order.

    Args:
        x: np.ndarray. Four equal blocks along ``axis``.
        order: str. Each block's gate in ``x``, four letters of
            :data:`GATE_ORDER`, ``j`` the candidate: torch's ``g``,
            Paddle's ``c``.
        axis: int. The axis of the blocks.

    Example:
        >>> import numpy as np
        >>> to_tf1_gates(np.arange(4), "ifjo")
        array([0, 2, 1, 3])
    """
    import numpy as np

    if sorted(order) != sorted(GATE_ORDER):
        raise ValueError(f"order: expected the letters of {GATE_ORDER!r}, "
                         f"found {order!r}")
    blocks = dict(zip(order, np.split(x, 4, axis=axis)))
    return np.concatenate([blocks[g] for g in GATE_ORDER], axis=axis)


def without_forget_bias(bias: np.ndarray) -> np.ndarray:
    """A copy of a bias in TF1's gate order with the forget block lowered
    by :data:`TF_FORGET_BIAS`. With it, TF1's ``LSTMCell`` computes what a
    cell that adds no forget bias computes.

    Example:
        >>> import numpy as np
        >>> without_forget_bias(np.zeros(4, np.float32))
        array([ 0.,  0., -1.,  0.], dtype=float32)
    """
    import numpy as np

    bias = np.array(bias)
    n = bias.shape[-1] // 4
    f = GATE_ORDER.index("f")
    bias[..., f * n:(f + 1) * n] -= TF_FORGET_BIAS
    return bias
