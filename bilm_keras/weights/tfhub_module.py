"""TF1 Hub modules of ELMo (Google's ``google/elmo``, DeepPavlov's), read
into bilm-tf's HDF5 layout.

::

    from bilm_keras.weights.tfhub_module import (
        read_tfhub_module, write_converted)
    module = read_tfhub_module("elmo_3/")
    write_converted(module, "elmo-3")
    # elmo-3/options.json, lm_weights.hdf5, mix.json

A TF1 Hub module is a folder that ``hub.Module.export`` wrote
(``convert-tfhub`` is :mod:`.tfhub_conversion`). It holds
``tfhub_module.pb``, ``saved_model.pb`` (one TF1 graph) and
``variables/variables.{index,data-*}``, a name-based checkpoint.

ELMo's modules hold bilm-tf's inference graph. So its variables are under
``bilm/`` with the names of :mod:`bilm_keras.weights.bilm_tf_names`. The
LSTMs' names are in the generation
:data:`~bilm_keras.weights.bilm_tf_names.TF_1_5_MODEL`
(``bilm/RNN_0/RNN/MultiRNNCell/Cell0/rnn/lstm_cell/kernel``) or
:data:`~bilm_keras.weights.bilm_tf_names.TF_1_2` (``.../LSTMCell/W_0``).
Their values are the HDF5 file's, the char table with its padding row.

Besides the weights the checkpoint holds:

* the learned mix, kept as ``mix.json``
  (:mod:`bilm_keras.weights.learned_mix`). Google's is
  ``aggregation/weights`` `(K,)` and ``aggregation/scaling`` `()`.
  DeepPavlov's is ``aggregation/elmo_output_ELMo_W`` `(K,)` and
  ``_gamma`` `(1,)`.
* the LSTM state caches of bilm-tf's graph, `(max_batch_size, dim)`. They
  are ``bilm/Variable``, ``bilm/Variable_1``, ..., and ``bilm_1/...`` for
  a second signature. They are skipped, as are a step counter and
  optimizer slots.

Any other variable is named in the error: nothing is guessed.

The options come from the variables' shapes: filters, highway layers,
dimensions, layers and ``n_characters``, 262 where the table has the
padding row. What shapes cannot tell comes from the graph's constants.
Those are the clip values, a skip connection's add, the max-pool window
that gives ``max_characters_per_token``, and the activation. They are read
from ``saved_model.pb`` as a protocol buffer, and the graph is never run
or loaded into TensorFlow. A graph that does not tell them needs an
options file, asked for in one line. One given is checked against the
shapes and the graph.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
from typing import Dict, List, Optional, Tuple

import numpy as np

from bilm_keras._utils.atomic_files import atomic_directory
from bilm_keras._utils.problem_list import fit_problems, problem_list
from bilm_keras.options import OPTIONS_FILE, BiLMOptions
from bilm_keras.weights.bilm_tf_names import (
    CHAR_EMBED,
    CNN_SCOPE,
    HIGHWAY_PARTS,
    LSTM_BIAS,
    LSTM_KERNEL,
    LSTM_PROJECTION,
    PROJECTION_BIAS,
    PROJECTION_KERNEL,
    AGGREGATION_SCOPE,
    MODEL_SCOPE,
    STATE_CACHE,
    TF_1_2,
    TF_1_5_MODEL,
    conv_bias,
    conv_kernel,
    elmo_mix_names,
    highway_bias,
    highway_kernel,
    lstm_cell_scope,
    lstm_generation,
    lstm_hdf5_prefix,
    tf1_name,
)
from bilm_keras.weights.checkpoint_files import checkpoint_damage
from bilm_keras.weights.learned_mix import MIX_FILE, LearnedMix, write_mix
from bilm_keras.weights.model_folder import WEIGHT_FILE, write_model_files

logger = logging.getLogger(__name__)

TFHUB_MODULE_FILE = "tfhub_module.pb"
SAVED_MODEL_FILE = "saved_model.pb"
#: the checkpoint prefix inside a module folder
VARIABLES_PREFIX = os.path.join("variables", "variables")
#: the learned mix's variables, ``(logits, scale)``, in each module
#: family: Google's own names, and bilm-tf's ``weight_layers("elmo_output")``
#: in DeepPavlov's
MIX_VARIABLES = {
    "google": (AGGREGATION_SCOPE + "weights", AGGREGATION_SCOPE + "scaling"),
    "deeppavlov": elmo_mix_names("elmo_output"),
}
#: the LSTM name generations a module's graph may have
MODULE_GENERATIONS = (TF_1_5_MODEL, TF_1_2)
#: variables that are not weights: a step counter, optimizer slots
_NOT_WEIGHTS = re.compile(
    r"(^|/)(global_step|beta[12]_power)$|/(Adagrad|Adam|Adam_1|Momentum)$")
#: what only the graph or an options file says
GRAPH_OPTIONS = ("cell_clip", "proj_clip", "use_skip_connections",
                 "max_characters_per_token", "activation")


class TFHubModuleError(ValueError):
    """A folder that is not a TF1 Hub module of ELMo, or one whose
    variables do not fit. The message names the file, the variable, what
    was expected and what was found."""


@dataclasses.dataclass(frozen=True)
class TFHubModule:
    """A TF1 Hub module of ELMo, checked. Its tensors are read on demand.

    Attributes:
        path: str. The module folder.
        options: dict. bilm-tf's ``options.json`` of the model.
        generation: str. The LSTM names' generation.
        datasets: tuple of (str, str). Each HDF5 dataset and the module
            variable that holds it, in the HDF5 table's order.
        mix: LearnedMix or None. The module's learned mix.
        family: str. ``"google"`` or ``"deeppavlov"``, by the mix's names.
    """

    path: str
    options: dict
    generation: str
    datasets: Tuple[Tuple[str, str], ...]
    mix: Optional[LearnedMix]
    family: Optional[str]

    @property
    def checkpoint_prefix(self) -> str:
        return os.path.join(self.path, VARIABLES_PREFIX)

    def iter_datasets(self):
        """``(dataset name, float32 value)`` in bilm-tf's HDF5 layout."""
        reader = _reader(self.checkpoint_prefix)
        for dataset, name in self.datasets:
            value = np.asarray(
                _tensor(reader, self.checkpoint_prefix, name), np.float32)
            if dataset == CHAR_EMBED and (
                    self.options["char_cnn"]["n_characters"] == 262):
                value = value[1:]  # the graph's padding row: not in the file
            yield dataset, value


def _reader(prefix: str):
    """TensorFlow's reader of checkpoint ``prefix``; an index it cannot
    parse is a :class:`TFHubModuleError`."""
    import tensorflow as tf

    try:
        return tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError) as e:
        raise TFHubModuleError(
            f"{prefix}.index: not a readable TensorFlow checkpoint "
            f"({_first_line(e)})") from None


def _first_line(error: Exception) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0]


def _tensor(reader, prefix: str, name: str) -> np.ndarray:
    """Variable ``name``; one its data file cannot give (a CRC that does
    not match, bytes cut short) is a :class:`TFHubModuleError`."""
    import tensorflow as tf

    try:
        return reader.get_tensor(name)
    except (tf.errors.OpError, RuntimeError, ValueError) as e:
        raise TFHubModuleError(
            f"{prefix}: cannot read {name} ({_first_line(e)})") from None


# --- the folder -------------------------------------------------------------
def check_module_folder(path: str | os.PathLike) -> str:
    """``path`` as a string, if it holds a TF1 Hub module's files.

    Raises:
        TFHubModuleError: a TF2 SavedModel, a missing file, or a
            checkpoint index without its data (one line).
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise TFHubModuleError(
            f"{path}: expected a TF1 Hub module folder, found "
            f"{'a file' if os.path.exists(path) else 'nothing'}")
    saved_model = os.path.join(path, SAVED_MODEL_FILE)
    if not os.path.isfile(saved_model):
        raise TFHubModuleError(
            f"{path}: expected a TF1 Hub module ({TFHUB_MODULE_FILE}, "
            f"{SAVED_MODEL_FILE}, variables/), found no {SAVED_MODEL_FILE}")
    if not os.path.isfile(os.path.join(path, TFHUB_MODULE_FILE)):
        kind = ("a TF2 SavedModel (an object graph, no "
                f"{TFHUB_MODULE_FILE})" if _has_object_graph(saved_model)
                else f"a SavedModel without {TFHUB_MODULE_FILE}")
        raise TFHubModuleError(
            f"{path}: expected a TF1 Hub module, found {kind}; a TF2 "
            "SavedModel is loaded with tf.saved_model.load, not converted")
    damage = checkpoint_damage(os.path.join(path, VARIABLES_PREFIX))
    if damage is not None:
        raise TFHubModuleError(
            f"{path}: variables/{damage}")
    return path


def _graph_def(saved_model: str):
    """The first meta graph of ``saved_model``, or None if unreadable."""
    from google.protobuf.message import DecodeError
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    try:
        with open(saved_model, "rb") as f:
            proto.ParseFromString(f.read())
    except (OSError, DecodeError):
        return None
    return proto.meta_graphs[0] if proto.meta_graphs else None


def _has_object_graph(saved_model: str) -> bool:
    meta = _graph_def(saved_model)
    return meta is not None and meta.HasField("object_graph_def")


# --- what the graph says ----------------------------------------------------
def _node_name(inp: str) -> str:
    return inp.lstrip("^").split(":")[0]


def _const_value(saved_model: str, node) -> float:
    """A clip's bound: the float32 scalar of Const ``node``."""
    tensor = node.attr["value"].tensor
    if tensor.float_val:
        return float(tensor.float_val[0])
    content = tensor.tensor_content
    if len(content) == 4:
        return float(np.frombuffer(content, np.float32)[0])
    raise TFHubModuleError(
        f"{saved_model}: {node.name}: expected a float32 constant (a "
        f"clip's bound), found {len(content)} bytes and no float value")


def graph_options(saved_model: str, filters: List[List[int]],
                  n_layers: int) -> Dict[str, object]:
    """The options of :data:`GRAPH_OPTIONS` that the module's graph tells.

    Args:
        saved_model: str. The module's ``saved_model.pb``.
        filters: list of [width, n]. The convolutions, for the pool window.
        n_layers: int. LSTM layers, for the skip connections.

    Returns:
        ``{option: value}`` for each option the graph says. It is empty for
        a graph that does not parse or has no bilm-tf biLM.
    """
    meta = _graph_def(saved_model)
    if meta is None:
        return {}
    nodes = {node.name: node for node in meta.graph_def.node}
    found: Dict[str, object] = {}
    cell0 = MODEL_SCOPE + lstm_cell_scope(0, 0)
    if any(name.startswith(cell0) for name in nodes):
        # TF1's LSTMCell clips the cell state (an add) and the projection
        # (a MatMul) with clip_by_value: Minimum(x, clip), then Maximum
        found["cell_clip"] = found["proj_clip"] = None
        for name, node in nodes.items():
            if (node.op == "Minimum" and name.startswith(cell0)
                    and "clip_by_value" in name):
                if len(node.input) != 2:
                    continue
                source = nodes.get(_node_name(node.input[0]))
                bound = nodes.get(_node_name(node.input[1]))
                if source is None or bound is None or bound.op != "Const":
                    continue
                which = "proj_clip" if source.op == "MatMul" else "cell_clip"
                found[which] = _const_value(saved_model, bound)
    cell1 = MODEL_SCOPE + lstm_cell_scope(0, 1)
    if n_layers == 1:
        found["use_skip_connections"] = False
    elif any(name.startswith(cell1) for name in nodes):
        # ResidualWrapper adds the layer's input to the cell's output,
        # outside the cell's own scope
        def in_cell(name):
            return "/lstm_cell/" in name or "/LSTMCell/" in name

        found["use_skip_connections"] = any(
            node.op in ("Add", "AddV2") and name.startswith(cell1)
            and not in_cell(name)
            and any(in_cell(_node_name(i)) for i in node.input)
            for name, node in nodes.items())
    pool = nodes.get(MODEL_SCOPE + CNN_SCOPE + "MaxPool")
    if pool is not None and len(pool.attr["ksize"].list.i) == 4:
        window = pool.attr["ksize"].list.i[2]
        found["max_characters_per_token"] = int(window + filters[0][0] - 1)
    for op, activation in (("Relu", "relu"), ("Tanh", "tanh")):
        if MODEL_SCOPE + CNN_SCOPE + op in nodes:
            found["activation"] = activation
    return found


# --- the variables ----------------------------------------------------------
def _count(shapes: dict, name) -> int:
    """How many of ``name(0)``, ``name(1)``, ... are in ``shapes``."""
    n = 0
    while name(n) in shapes:
        n += 1
    return n


def _shape_options(path: str, shapes: dict, generation: str) -> dict:
    """bilm-tf options from the variables' shapes (those they fix)."""
    def var(dataset):
        return MODEL_SCOPE + tf1_name(dataset, generation)

    def shape(dataset):
        return shapes.get(var(dataset))

    table = shape(CHAR_EMBED)
    if table is None or len(table) != 2:
        raise TFHubModuleError(
            f"{path}: {var(CHAR_EMBED)}: expected the char table `(262, "
            f"char_dim)`, found {table or 'no such variable'} (a "
            "word-input module is not supported)")
    filters = []
    for i in range(_count(shapes, lambda i: var(conv_kernel(i)))):
        kernel = shape(conv_kernel(i))
        if len(kernel) != 4:
            raise TFHubModuleError(
                f"{path}: {var(conv_kernel(i))}: expected a conv2d kernel "
                f"`(1, width, char_dim, n)`, found shape {kernel}")
        filters.append([int(kernel[1]), int(kernel[3])])
    if not filters:
        raise TFHubModuleError(
            f"{path}: expected {var(conv_kernel(0))}, the first "
            "convolution, found no such variable")
    n_highway = _count(
        shapes, lambda k: MODEL_SCOPE + highway_kernel(k, HIGHWAY_PARTS[0]))
    layers = []
    for d in range(2):
        n = _count(shapes, lambda k, d=d: var(
            f"{lstm_hdf5_prefix(d, k)}/{LSTM_BIAS}"))
        layers.append(n)
    if layers[0] == 0:
        raise TFHubModuleError(
            f"{path}: expected "
            f"{var(lstm_hdf5_prefix(0, 0) + '/' + LSTM_BIAS)}, the first "
            "LSTM, found no such variable")
    bias = shape(f"{lstm_hdf5_prefix(0, 0)}/{LSTM_BIAS}")
    lstm_dim = int(bias[0]) // 4
    w_p = shape(f"{lstm_hdf5_prefix(0, 0)}/{LSTM_PROJECTION}")
    projection_dim = int(w_p[1]) if w_p is not None else lstm_dim
    return {
        "lstm": {
            "dim": lstm_dim,
            "projection_dim": projection_dim,
            "n_layers": layers[0],
        },
        "char_cnn": {
            "embedding": {"dim": int(table[1])},
            "filters": filters,
            "n_highway": n_highway,
            # the graph's table has row 0 for the +1-shifted padding id
            "n_characters": int(table[0]),
        },
        "bidirectional": layers[1] > 0,
    }


def expected_shapes(options: dict) -> List[Tuple[str, tuple]]:
    """Each HDF5 dataset of the model ``options`` describe and its shape
    in the module's graph (the char table with its padding row)."""
    cnn, lstm = options["char_cnn"], options["lstm"]
    char_dim = cnn["embedding"]["dim"]
    n_filters = sum(n for _, n in cnn["filters"])
    p, dim = lstm["projection_dim"], lstm["dim"]
    out = [(CHAR_EMBED, (cnn["n_characters"], char_dim))]
    for i, (width, n) in enumerate(cnn["filters"]):
        out += [(conv_kernel(i), (1, width, char_dim, n)),
                (conv_bias(i), (n,))]
    for k in range(cnn.get("n_highway") or 0):
        for part in HIGHWAY_PARTS:
            out += [(highway_kernel(k, part), (n_filters, n_filters)),
                    (highway_bias(k, part), (n_filters,))]
    if n_filters != p:
        out += [(PROJECTION_KERNEL, (n_filters, p)),
                (PROJECTION_BIAS, (p,))]
    for d in range(2 if options.get("bidirectional", True) else 1):
        for layer in range(lstm["n_layers"]):
            prefix = lstm_hdf5_prefix(d, layer)
            out += [(f"{prefix}/{LSTM_KERNEL}", (p + p, 4 * dim)),
                    (f"{prefix}/{LSTM_BIAS}", (4 * dim,))]
            if p != dim:
                out.append((f"{prefix}/{LSTM_PROJECTION}", (dim, p)))
    return out


def _read_mix(path: str, reader, shapes: dict, n_layers: int):
    """``(family, LearnedMix or None, mix variable names)``."""
    for family, (logits, scale) in MIX_VARIABLES.items():
        if logits in shapes or scale in shapes:
            problems = []
            if shapes.get(logits) != [n_layers]:
                problems.append(f"{logits}: expected shape ({n_layers},), "
                                f"found {shapes.get(logits, 'none')}")
            if shapes.get(scale) not in ([], [1]):
                problems.append(f"{scale}: expected shape () or (1,), "
                                f"found {shapes.get(scale, 'none')}")
            if problems:
                raise TFHubModuleError(
                    f"{path}: the learned mix does not fit: "
                    + problem_list(problems))
            prefix = os.path.join(path, VARIABLES_PREFIX)
            w = np.asarray(_tensor(reader, prefix, logits), np.float64)
            gamma = float(np.asarray(
                _tensor(reader, prefix, scale)).reshape(-1)[0])
            return family, LearnedMix(tuple(float(x) for x in w), gamma), (
                logits, scale)
    return None, None, ()


def _options_from_file(options_file: str) -> dict:
    BiLMOptions.from_json(options_file)  # the file's own errors first
    with open(options_file, encoding="utf-8") as f:
        return json.load(f)


def _fill_unshaped(path: str, options: dict, graph: dict,
                   given: Optional[dict], options_file: Optional[str]
                   ) -> None:
    """Fills :data:`GRAPH_OPTIONS` from the graph, then ``given``."""
    problems, missing = [], []
    for field in GRAPH_OPTIONS:
        section = "char_cnn" if field in ("max_characters_per_token",
                                          "activation") else "lstm"
        if given is not None:
            value = given.get(section, {}).get(field)
            if field in graph and graph[field] != value:
                problems.append(f"{section}.{field}: the graph has "
                                f"{graph[field]!r}, {options_file} has "
                                f"{value!r}")
            options[section][field] = value
        elif field in graph:
            options[section][field] = graph[field]
        else:
            missing.append(field)
    if problems:
        raise TFHubModuleError(
            f"{options_file} does not fit the module {path}: "
            + problem_list(problems))
    if missing:
        raise TFHubModuleError(
            f"{path}: the module's graph does not say "
            f"{', '.join(missing)}; pass an options file with them "
            "(--options_file / options_file=)")


def _given_shape_problems(options: dict, given: dict,
                          options_file: str) -> List[str]:
    """Where an options file contradicts the shapes."""
    problems = []
    for section, fields in (("lstm", ("dim", "projection_dim", "n_layers")),
                            ("char_cnn", ("filters", "n_highway"))):
        for field in fields:
            mine = options[section][field]
            theirs = given.get(section, {}).get(field)
            if field == "n_highway":
                theirs = theirs or 0
            if theirs != mine:
                problems.append(f"{section}.{field}: the variables give "
                                f"{mine!r}, {options_file} has {theirs!r}")
    dim = given.get("char_cnn", {}).get("embedding", {}).get("dim")
    if dim != options["char_cnn"]["embedding"]["dim"]:
        problems.append(f"char_cnn.embedding.dim: the variables give "
                        f"{options['char_cnn']['embedding']['dim']}, "
                        f"{options_file} has {dim!r}")
    return problems


def read_tfhub_module(path: str | os.PathLike, *,
                      options_file: Optional[str | os.PathLike] = None
                      ) -> TFHubModule:
    """Checks a TF1 Hub module folder of ELMo (see the module doc).

    Args:
        path: the module folder.
        options_file: bilm-tf's ``options.json`` of the model, for what
            neither the shapes nor the graph tell. It is checked against
            both.

    Returns:
        A :class:`TFHubModule`.

    Raises:
        TFHubModuleError: in one line each, a folder that is not a TF1
            Hub module, or a missing data file. Also variables that are
            missing, unknown, or of shapes that contradict each other or
            the options. Also options that only an options file can
            give.
    """
    path = check_module_folder(path)
    prefix = os.path.join(path, VARIABLES_PREFIX)
    reader = _reader(prefix)
    shapes = {name: list(shape) for name, shape
              in reader.get_variable_to_shape_map().items()}
    generation = lstm_generation(shapes, scope=MODEL_SCOPE,
                                 generations=MODULE_GENERATIONS)
    if generation is None:
        shown = problem_list(sorted(shapes))
        raise TFHubModuleError(
            f"{path}: expected bilm-tf's biLM under {MODEL_SCOPE} "
            f"(e.g. {MODEL_SCOPE}"
            f"{tf1_name(lstm_hdf5_prefix(0, 0) + '/W_0', TF_1_5_MODEL)}), "
            f"found {len(shapes)} variable(s): {shown or 'none'}")
    options = _shape_options(path, shapes, generation)
    given = None
    if options_file is not None:
        options_file = os.fspath(options_file)
        try:
            given = _options_from_file(options_file)
        except (OSError, ValueError) as e:
            raise TFHubModuleError(str(e)) from None
        problems = _given_shape_problems(options, given, options_file)
        if problems:
            raise TFHubModuleError(
                f"{options_file} does not fit the module {path}: "
                + problem_list(problems))
    graph = graph_options(os.path.join(path, SAVED_MODEL_FILE),
                          options["char_cnn"]["filters"],
                          options["lstm"]["n_layers"])
    _fill_unshaped(path, options, graph, given, options_file)
    family, mix, mix_names = _read_mix(
        path, reader, shapes, options["lstm"]["n_layers"] + 1)
    # every expected variable, with its shape; every other weight named
    datasets, expected = [], {}
    for dataset, shape in expected_shapes(options):
        name = MODEL_SCOPE + tf1_name(dataset, generation)
        datasets.append((dataset, name))
        expected[name] = shape
    weights = sorted(
        name for name in shapes
        if name not in mix_names and not STATE_CACHE.match(name)
        and not _NOT_WEIGHTS.search(name))
    problems = fit_problems(
        expected, {name: tuple(shape) for name, shape in shapes.items()},
        weights)
    if problems:
        raise TFHubModuleError(
            f"{path}: the variables do not fit one bilm-tf biLM: "
            + problem_list(problems))
    try:
        BiLMOptions.from_dict(options, source=f"{path} (inferred options)")
    except ValueError as e:
        raise TFHubModuleError(str(e)) from None
    logger.info("%s: a %s TF1 Hub module, LSTM names of %s, %s", path,
                family or "mix-less", generation,
                "with its learned mix" if mix else "no learned mix")
    return TFHubModule(path=path, options=options, generation=generation,
                       datasets=tuple(datasets), mix=mix, family=family)


def write_converted(module: TFHubModule, outdir: str | os.PathLike, *,
                    overwrite: bool = False) -> Dict[str, str]:
    """Writes ``options.json``, ``lm_weights.hdf5`` and, where the module
    has one, ``mix.json`` into ``outdir``, all or nothing.

    Returns:
        ``{"outdir", "options_file", "weight_file", "mix_file"}`` paths
        (``mix_file`` None without a mix).
    """
    outdir = os.path.abspath(os.fspath(outdir))
    with atomic_directory(outdir, overwrite=overwrite) as tmp:
        write_model_files(tmp, module.iter_datasets(), module.options)
        if module.mix is not None:
            write_mix(os.path.join(tmp, MIX_FILE), module.mix)
    return {
        "outdir": outdir,
        "options_file": os.path.join(outdir, OPTIONS_FILE),
        "weight_file": os.path.join(outdir, WEIGHT_FILE),
        "mix_file": (os.path.join(outdir, MIX_FILE)
                     if module.mix is not None else None),
    }
