"""Export a biLM as a TF-Hub-style SavedModel (google/elmo/3's interface).

The SavedModel has three signatures and the Reusable SavedModel attributes
on its root. So ``hub.load``, ``hub.KerasLayer`` (tf_keras 2, trainable or
through a signature) and Keras 3's ``keras.layers.TFSMLayer`` (inference)
all consume it. To fine-tune in Keras 3, use
:class:`~bilm_keras.export.ELMoHubLayer`. Keras 3's optimizers cannot
train ``TFSMLayer``'s weights, because their names keep TensorFlow's ``:0``.

In the signatures below, ``B`` is the batch and ``T`` the tokens. ``C`` is
max_characters_per_token and ``P`` projection_dim::

    name     inputs                                    time axis T
    default  strings       tf.string (B,)              most tokens in a row
    tokens   tokens        tf.string (B, max_len)      max_len
             sequence_len  tf.int32  (B,)
    elmo     char_ids      tf.int32  (B, T + 2, C)     input time - 2

Every signature, and the root's ``__call__``, returns the same dict::

    word_emb       tf.float32 (B, T, P)      char-CNN token embeddings
    lstm_outputs1  tf.float32 (B, T, 2 * P)  LSTM layer 1, forward ++ backward
    lstm_outputs2  tf.float32 (B, T, 2 * P)  LSTM layer 2 (one key per layer)
    elmo           tf.float32 (B, T, 2 * P)  learned scalar mix of the layers
    default        tf.float32 (B, 2 * P)     mean of elmo over the real tokens
    sequence_len   tf.int32   (B,)           tokens per row

A word-input model has the same signatures and outputs. Its options have
no ``char_cnn``, as in a converted Paddle baike model. Its vocabulary is a
hash table in the graph (:mod:`bilm_keras.export.graph_word_ids`), so the
vocabulary is then required. ``char_ids`` of ``elmo`` is `(B, T + 2, 1)`,
``TokenBatcher``'s ids, and ``word_emb`` the token table's rows.

A converted ELMoForManyLangs model has the same signatures and outputs.
Its options have an ``elmoformanylangs`` section. Its ids are those of
``ManyLangsBatcher`` (:mod:`bilm_keras.export.graph_manylangs_ids`).
``char_ids`` of ``elmo`` is then `(B, T + 2, W)`, with ``W = C + 1`` when
the model has a word part. Column ``C`` is then the +1-shifted word id.
Its ``char.dic`` and ``word.dic`` lookups are hash tables in the graph.
The two files also ship as assets beside ``options.json``, which names
them: ``root.char_dic_file`` and ``root.word_dic_file``.

``<S>`` and ``</S>`` are not in the outputs, as in google/elmo/3.
Positions past a row's ``sequence_len`` are zero, and so is ``default`` of
a row with no tokens. ``default`` splits on whitespace exactly as Python's
``str.split()``. Char ids are those of :class:`~bilm_keras.Batcher`
(:mod:`bilm_keras.export.graph_char_ids`). A batch of zero sentences
returns outputs with batch 0. Layer 0 of the mix, ``word_emb``, is used
twice, once per direction, as in bilm-tf's ``weight_layers``.

Bad input raises:

* a wrong dtype at a signature: ``InvalidArgumentError`` naming the
  expected and found dtypes.
* values out of range in ``sequence_len`` or ``char_ids``, or a wrong
  ``max_characters_per_token``: an in-graph assertion naming the input.
* a wrong rank: an error from the first op that meets it, because restored
  signatures do not check shapes.
* a wrong dtype or rank at the root's ``tf.function`` attributes
  ``default``, ``tokens`` and ``elmo``: an error before running, naming
  the expected ``TensorSpec``.

The root object also has:

* ``__call__(strings, training=False)``: a ``tf.function`` traced for both
  values of ``training``. The model has no dropout, so both give the same
  numbers.
* ``variables``.
* ``trainable_variables``: the scalar-mix weights and gamma, plus every LM
  weight with ``trainable_lm=True``.
* ``regularization_losses``: an L2 term on the mix weights when
  ``l2_coef`` is given, else empty.

The files ``options.json`` and, if given, the vocabulary ship as
``tf.saved_model.Asset``: ``root.options_file`` and ``root.vocab_file``.

Why ``tf.Module`` and ``tf.saved_model.save`` rather than Keras 3
``ExportArchive``? TF-Hub consumers need the *Reusable SavedModel*
interface. Its root is callable, and its ``__call__`` takes a Python
``training`` flag, so it must be traced once per value. An
``ExportArchive`` endpoint is fixed to one tensor input signature and
cannot express that. The root also needs ``variables``,
``trainable_variables`` and ``regularization_losses`` attributes, which
``hub.KerasLayer`` reads to find the weights it may train, and named
``signatures`` with dict outputs. ``ExportArchive`` writes endpoints and a
variables list but no callable root and no regularization losses. It
decides trainability from Keras' own flags. A ``tf.Module`` root gives
each of those pieces explicitly, in a few lines. It still runs our one
Keras ``BiLMBackbone`` and ``ScalarMix`` inside, their variables tracked
through the module.

Which LM weights are trainable is fixed where it matters for every
consumer. The saved ``tf.Variable``'s own ``trainable`` flag is read by
``TFSMLayer`` and set at creation with a variable creator scope. The
root's ``trainable_variables`` list is read by ``hub.KerasLayer``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import TYPE_CHECKING, Optional

import tensorflow as tf

from bilm_keras._utils.fast_precision import DEFAULT_PRECISION
from bilm_keras._utils.atomic_files import atomic_directory
from bilm_keras._utils.graph_function import graph_function
from bilm_keras.data.long_tokens import long_token_limit
from bilm_keras.data.manylangs_dictionaries import read_word_dic
from bilm_keras.export.graph_char_ids import (
    padded_tokens_to_char_ids,
    ragged_tokens,
    sentences_to_char_ids,
    split_sentences,
)
from bilm_keras.export.graph_long_tokens import warn_of_long_tokens
from bilm_keras.export.graph_manylangs_ids import ManyLangsGraphIds
from bilm_keras.export.graph_word_ids import WordGraphIds
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.layers.precision import dtype_policy, set_precision
from bilm_keras.layers.scalar_mix import ScalarMix
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.models.lm_embeddings import lm_layers, strip_boundaries
from bilm_keras.options import OPTIONS_FILE, BiLMOptions
from bilm_keras.weights.bilm_tf_hdf5 import load_bilm_tf_hdf5
from bilm_keras.weights.learned_mix import MIX_FILE, mix_beside

if TYPE_CHECKING:  # the training stack is imported only for a save_dir
    from bilm_keras.weights.model_detection import DetectedModel


class ExportError(ValueError):
    """An export that cannot be done as asked (nothing is written)."""


class ELMoHubModule(tf.Module):
    """The exported object: signatures + the Reusable SavedModel interface.

    Args:
        backbone: a built, character-input :class:`BiLMBackbone` with its
            weights loaded.
        options_file: path of the ``options.json`` to ship as an asset.
        vocab_file: optional vocabulary to ship as an asset.
        trainable_lm: list the LM weights in ``trainable_variables``. The
            weights' own ``trainable`` flags are set where the backbone is
            built, in :func:`build_backbone`.
        l2_coef: float or None. L2 penalty on the scalar-mix weights,
            exposed through ``regularization_losses``.
        graph_ids: the in-graph ids of a converted ELMoForManyLangs model
            or of a word-input model (:func:`graph_ids_for_options`). None
            means bilm-tf's char ids.
        char_dic_file, word_dic_file: that model's dictionaries, shipped
            as assets.

    Calling the module (``module(strings, training=False)``) or its
    ``default``/``tokens``/``elmo`` functions returns the dict described in
    the module docstring.
    """

    # tf.Module defines these as read-only properties; the Reusable
    # SavedModel interface wants them as saved attributes (lists of
    # variables), so the class attributes shadow the properties.
    variables = None
    trainable_variables = None

    # Nine parameters, by design: the backbone, then one per thing the
    # SavedModel carries (each file an Asset of its own, the graph's id
    # tables, the Reusable SavedModel's trainable and regularization
    # settings, the module's name); the export functions below build it
    # from their flags, each optional where a model kind lacks it.
    def __init__(
        self,
        backbone: BiLMBackbone,
        options_file: str,
        vocab_file: Optional[str] = None,
        trainable_lm: bool = False,
        l2_coef: Optional[float] = None,
        name: str = "elmo",
        graph_ids: Optional[ManyLangsGraphIds | WordGraphIds] = None,
        char_dic_file: Optional[str] = None,
        word_dic_file: Optional[str] = None,
    ):
        super().__init__(name=name)
        self.word_input = isinstance(graph_ids, WordGraphIds)
        if not backbone.use_character_inputs and not self.word_input:
            raise ExportError(
                "backbone: token input needs its vocabulary in the graph "
                "(graph_ids=WordGraphIds: pass vocab_file)"
            )
        self.backbone = backbone
        # the ids' value bound: characters, or words of a word-input model
        self.max_characters_per_token = (
            1 if self.word_input else backbone.max_characters_per_token)
        self.n_characters = (graph_ids.n_words + 1 if self.word_input
                             else backbone.n_characters)
        self.n_lstm_layers = backbone.n_layers
        self.scalar_mix = ScalarMix(
            backbone.n_layers + 1, l2_coef=l2_coef, name="scalar_mix"
        )
        self.scalar_mix.build()
        # tracked: its hash tables are saved with the module
        self.graph_ids = graph_ids
        # ids per position: chars (+ the word id of a ManyLangs model)
        self.ids_width = (self.max_characters_per_token if graph_ids is None
                          else graph_ids.width)
        self.options_file = tf.saved_model.Asset(os.fspath(options_file))
        self.vocab_file = (
            None if vocab_file is None
            else tf.saved_model.Asset(os.fspath(vocab_file))
        )
        # the longest plausible token (data/long_tokens.py), a constant of
        # the graph: the string signatures warn past it
        self._long_token_limit = long_token_limit(
            self.max_characters_per_token,
            unit="bytes" if graph_ids is None else "characters",
            words=None if word_dic_file is None
            else read_word_dic(word_dic_file))
        self.char_dic_file, self.word_dic_file = (
            None if f is None else tf.saved_model.Asset(os.fspath(f))
            for f in (char_dic_file, word_dic_file)
        )

        self._track_variables(trainable_lm, l2_coef)
        self._define_functions()

    def _track_variables(self, trainable_lm: bool,
                         l2_coef: Optional[float]) -> None:
        """The Reusable SavedModel's variable lists and regularization."""
        backbone = self.backbone
        # The Keras variables themselves, not their inner tf.Variable (as
        # Keras' ExportArchive does): a second path to the tf.Variable would
        # be restored as a separate copy that the functions do not read.
        mix_vars = list(self.scalar_mix.weights)
        lm_vars = list(backbone.weights)
        self.variables = lm_vars + mix_vars
        self.trainable_variables = (lm_vars if trainable_lm else []) + mix_vars
        self.regularization_losses = []
        if l2_coef:
            self.regularization_losses.append(
                graph_function(self.scalar_mix.regularization,
                               input_signature=[])
            )

    def _define_functions(self) -> None:
        """The traced graphs and the three signatures' functions."""
        # One traced graph of the model per value of ``training``, called
        # by every signature and by __call__: the model is traced twice
        # instead of once per entry point, and saved twice, not five times.
        # Concrete functions, traced here once: the save traces a
        # tf.function again in its own context (a second trace of the
        # model each), a concrete function never.
        ids_spec = tf.TensorSpec([None, None, self.ids_width], tf.int32,
                                 name="char_ids")
        self._embed_inference = graph_function(
            lambda char_ids: self.embed_char_ids(char_ids, training=False)
        ).get_concrete_function(ids_spec)
        self._embed_training = graph_function(
            lambda char_ids: self.embed_char_ids(char_ids, training=True)
        ).get_concrete_function(ids_spec)
        self.default = graph_function(
            self._default,
            input_signature=[tf.TensorSpec([None], tf.string, name="strings")],
        )
        self.tokens = graph_function(
            self._tokens,
            input_signature=[
                tf.TensorSpec([None, None], tf.string, name="tokens"),
                tf.TensorSpec([None], tf.int32, name="sequence_len"),
            ],
        )
        self.elmo = graph_function(
            self._elmo,
            input_signature=[
                tf.TensorSpec([None, None, self.ids_width],
                              tf.int32, name="char_ids"),
            ],
        )

    # ------------------------------------------------------------ the graph
    def embed_char_ids(self, char_ids, training=False):
        """Batcher char ids `(B, T + 2, C)` -> the output dict."""
        # B=batch, L=lstm layers + 1, T=tokens, P=projection_dim
        batch = tf.shape(char_ids)[0]
        # The char-CNN cannot run on an empty batch: compute one all-padding
        # row instead and slice the outputs back to batch 0 below.
        char_ids = tf.cond(
            tf.equal(batch, 0),
            lambda: tf.zeros(
                tf.concat([[1], tf.shape(char_ids)[1:]], 0), char_ids.dtype
            ),  # (1, T + 2, C)
            lambda: char_ids,
        )
        if self.word_input:
            char_ids = char_ids[..., 0]  # (B, T + 2): TokenBatcher's ids
        out = self.backbone(char_ids, training=training)
        layers, lengths, mask = strip_boundaries(
            lm_layers(out), out["lengths"]
        )  # (B, L, T, 2P), (B,), (B, T)
        mask_f = tf.cast(mask, layers.dtype)[:, :, None]  # (B, T, 1)
        word_emb = out["token_embeddings"][:, 1:-1] * mask_f  # (B, T, P)
        elmo = self.scalar_mix(layers, mask, training=training) * mask_f
        n_tokens = tf.maximum(tf.cast(lengths, elmo.dtype), 1.0)[:, None]
        outputs = {"word_emb": word_emb}
        for i in range(1, self.n_lstm_layers + 1):
            outputs[f"lstm_outputs{i}"] = layers[:, i]  # (B, T, 2P)
        outputs["elmo"] = elmo
        outputs["default"] = tf.reduce_sum(elmo, axis=1) / n_tokens  # (B, 2P)
        outputs["sequence_len"] = tf.cast(lengths, tf.int32)
        return {k: v[:batch] for k, v in outputs.items()}

    def _check_char_ids(self, char_ids):
        # A restored signature does not check shapes against its spec;
        # these run in the graph (rank is not checkable there: TensorFlow
        # folds it from the spec).
        mc = self.max_characters_per_token
        if self.word_input:
            width = "1 id per token (a word-input model)"
            batcher = "TokenBatcher"
        elif self.graph_ids is None:
            width = f"{mc} characters per token (max_characters_per_token)"
            batcher = "Batcher"
        else:
            width = (f"{self.ids_width} ids per token (max_characters_per_"
                     f"token{' + 1 word id' if self.ids_width > mc else ''})")
            batcher = "ManyLangsBatcher"
        checks = [
            tf.debugging.assert_equal(
                tf.shape(char_ids)[-1], self.ids_width,
                message=f"char_ids: expected {width}, found",
            ),
            tf.debugging.assert_non_negative(
                char_ids, message="char_ids: expected values >= 0"
            ),
            tf.debugging.assert_less(
                char_ids[..., :mc], tf.constant(self.n_characters, tf.int32),
                message=(
                    f"char_ids: expected values < {self.n_characters} "
                    f"({batcher}'s +1-shifted ids)"
                ),
            ),
            tf.debugging.assert_greater_equal(
                tf.shape(char_ids)[1], 2,
                message="char_ids: expected time >= 2 (<S> and </S>)",
            ),
        ]
        if self.ids_width > mc and not self.word_input:
            n_words = self.graph_ids.n_words + 1
            checks.append(tf.debugging.assert_less(
                char_ids[..., mc:], tf.constant(n_words, tf.int32),
                message=(f"char_ids: expected word ids (column {mc}) < "
                         f"{n_words} (ManyLangsBatcher's +1-shifted ids)"),
            ))
        return checks

    def _ids_of_strings(self, strings):
        """`(B,)` sentences -> the model's ids `(B, T + 2, W)`."""
        if self.graph_ids is None:
            return sentences_to_char_ids(strings,
                                         self.max_characters_per_token)
        return self.graph_ids.sentences_to_ids(strings)

    def _ids_of_tokens(self, tokens, sequence_len):
        """`(B, max_len)` tokens -> the model's ids `(B, max_len + 2, W)`."""
        if self.graph_ids is None:
            return padded_tokens_to_char_ids(tokens, sequence_len,
                                             self.max_characters_per_token)
        return self.graph_ids.padded_tokens_to_ids(tokens, sequence_len)

    def _default(self, strings):
        warn_of_long_tokens(split_sentences(strings), self._long_token_limit)
        return self._embed_inference(self._ids_of_strings(strings))

    def _tokens(self, tokens, sequence_len):
        warn_of_long_tokens(ragged_tokens(tokens, sequence_len)[0],
                            self._long_token_limit)
        return self._embed_inference(self._ids_of_tokens(tokens, sequence_len))

    def _elmo(self, char_ids):
        with tf.control_dependencies(self._check_char_ids(char_ids)):
            char_ids = tf.identity(char_ids)
        return self._embed_inference(char_ids)

    @graph_function
    def __call__(self, strings, training=False):
        """The ``default`` signature's computation, for ``hub.KerasLayer``."""
        embed = self._embed_training if training else self._embed_inference
        warn_of_long_tokens(split_sentences(strings), self._long_token_limit)
        return embed(self._ids_of_strings(strings))

    def signatures(self) -> dict:
        """The functions to save as SavedModel signatures.

        Each has its input signature, so ``tf.saved_model.save`` traces it
        once, while saving. Traced before the save, it would be traced
        again there, since the save traces a ``tf.function`` in its own
        context."""
        return {"default": self.default, "tokens": self.tokens,
                "elmo": self.elmo}

    def trace_call(self) -> None:
        """Traces ``__call__`` for both values of ``training`` (to save)."""
        spec = tf.TensorSpec([None], tf.string, name="strings")
        for training in (False, True):
            self.__call__.get_concrete_function(spec, training=training)


# ----------------------------------------------------------------- building
@contextlib.contextmanager
def _variables_trainable(trainable: bool):
    """Creates every ``tf.Variable`` in the block with ``trainable``.

    Keras 3 keeps trainability on its own variable wrapper. The saved
    ``tf.Variable`` underneath keeps its creation flag, and that flag is
    what a reloaded SavedModel, and ``TFSMLayer``, report.
    """

    def creator(next_creator, **kwargs):
        kwargs["trainable"] = trainable
        return next_creator(**kwargs)

    with tf.variable_creator_scope(creator):
        yield


def build_backbone(
    options: BiLMOptions, trainable_lm: bool, source: str = "options"
) -> BiLMBackbone:
    """A built backbone whose variables are trainable or not: character
    input, or word input for options without ``char_cnn``.

    Its weights are zeros (:func:`placeholder_weights`): the caller assigns
    them all (:func:`export_hub` from the HDF5 file).

    Args:
        source: the options' file, for error messages.
    """
    backbone = BiLMBackbone.from_options(
        options, use_character_inputs=options.char_cnn is not None,
        name="bilm"
    )
    with _variables_trainable(trainable_lm), placeholder_weights():
        backbone.build_all()
    backbone.trainable = trainable_lm
    return backbone


def graph_ids_for_options(
    options: BiLMOptions, vocab_file: Optional[str] = None,
    source: str = "options",
) -> Optional[ManyLangsGraphIds | WordGraphIds]:
    """The in-graph ids of a converted ELMoForManyLangs model or of a
    word-input model, or None for a bilm-tf character model.

    A ManyLangs model's dictionaries are read as upstream reads them. A
    word-input model's ``vocab_file`` is required."""
    if options.char_cnn is None:
        if vocab_file is None:
            raise ExportError(
                f"{source}: a word-input model (no 'char_cnn' section) "
                "needs its vocabulary in the SavedModel: pass vocab_file "
                "(--vocab_file)")
        ids = WordGraphIds.from_file(vocab_file)
        if ids.n_words != options.n_tokens_vocab:
            raise ExportError(
                f"{vocab_file}: expected {options.n_tokens_vocab} words "
                f"(n_tokens_vocab of {source}), found {ids.n_words}")
        return ids
    manylangs = options.manylangs
    if manylangs is None:
        return None
    return ManyLangsGraphIds.from_files(
        manylangs.char_dic,
        manylangs.word_dic if manylangs.has_word_part else None,
        options.char_cnn.max_characters_per_token,
    )


def _check_outdir(outdir: str, overwrite: bool) -> None:
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise ExportError(f"{outdir}: exists and is not a directory")
    if os.path.isdir(outdir) and os.listdir(outdir) and not overwrite:
        raise ExportError(
            f"{outdir}: export directory exists and is not empty "
            "(pass overwrite=True / --overwrite to replace it)"
        )


def save_module(module: ELMoHubModule, outdir: str, overwrite: bool) -> str:
    """Saves atomically: to a temporary sibling, then renamed to ``outdir``
    (:func:`~bilm_keras._utils.atomic_files.atomic_directory`).

    A failed save leaves ``outdir`` as it was. With ``overwrite`` an
    existing ``outdir`` is replaced only once the new one is complete.
    """
    outdir = os.path.abspath(os.fspath(outdir))
    _check_outdir(outdir, overwrite)
    with atomic_directory(outdir, overwrite=overwrite) as tmp:
        module.trace_call()
        tf.saved_model.save(module, tmp, signatures=module.signatures())
    return outdir


def export_hub(
    *,
    options_file: str | os.PathLike,
    weight_file: str | os.PathLike,
    outdir: str | os.PathLike,
    vocab_file: Optional[str | os.PathLike] = None,
    trainable_lm: bool = False,
    overwrite: bool = False,
    l2_coef: Optional[float] = None,
    precision: str = DEFAULT_PRECISION,
) -> str:
    """Exports bilm-tf files as a TF-Hub-style SavedModel.

    Args:
        options_file: bilm-tf ``options.json``, a converted
            ELMoForManyLangs model's, or a word-input model's. A ManyLangs
            model's dictionaries are read from the paths it names. A
            word-input model, such as a converted Paddle baike model, has
            no ``char_cnn``. A ``mix.json`` beside it, a converted TF1 Hub
            module's learned mix, starts the scalar mix.
        weight_file: bilm-tf ``lm_weights.hdf5``. A word-input model's
            holds its token table, ``embedding``.
        outdir: the SavedModel directory to write.
        vocab_file: vocabulary shipped as an asset. The char ids do not
            depend on it. A word-input model's ids do, so there it is
            required and put in the graph.
        trainable_lm: make every LM weight trainable too, for fine-tuning.
            By default only the scalar-mix weights and gamma are.
        overwrite: replace a non-empty ``outdir``. By default it is
            refused.
        l2_coef: optional L2 on the scalar-mix weights, in
            ``regularization_losses``.
        precision: what the saved graph's products compute in
            (:mod:`~bilm_keras.layers.precision`). ``"float32"`` is exact
            and the default. ``"bfloat16"`` suits AMX CPUs and GPUs of
            compute capability 8.0 and up. The signatures take and return
            float32 whatever it is, and the variables stay float32.

    Returns:
        The absolute path of ``outdir``. Inputs and outputs of each
        signature are listed in this module's docstring.

    Raises:
        ExportError: ``outdir`` is not empty without ``overwrite``, or
            a word-input model without its vocabulary.
        OptionsError, WeightFileError, VocabularyError: bad input files
            (nothing is written).
    """
    outdir = os.path.abspath(os.fspath(outdir))
    _check_outdir(outdir, overwrite)  # fail before the heavy work
    dtype_policy(precision)  # an unknown one named before any work
    if vocab_file is not None and not os.path.isfile(vocab_file):
        raise ExportError(f"{os.fspath(vocab_file)}: vocabulary not found")
    options = BiLMOptions.from_json(options_file)
    graph_ids = graph_ids_for_options(
        options, None if vocab_file is None else os.fspath(vocab_file),
        source=os.fspath(options_file))
    backbone = build_backbone(options, trainable_lm,
                              source=os.fspath(options_file))
    load_bilm_tf_hdf5(backbone, weight_file)
    set_precision(backbone, precision)
    manylangs = options.manylangs
    module = ELMoHubModule(
        backbone, options_file=os.fspath(options_file),
        vocab_file=None if vocab_file is None else os.fspath(vocab_file),
        trainable_lm=trainable_lm, l2_coef=l2_coef, graph_ids=graph_ids,
        char_dic_file=None if manylangs is None else manylangs.char_dic,
        word_dic_file=None if manylangs is None else manylangs.word_dic,
    )
    _start_from_learned_mix(module, os.fspath(options_file))
    return save_module(module, outdir, overwrite)


def _start_from_learned_mix(module: ELMoHubModule, options_file: str) -> None:
    """Sets the module's scalar mix to the ``mix.json`` beside
    ``options_file`` (a converted TF1 Hub module's learned mix), if any:
    its ``elmo`` output is then the original module's."""
    folder = os.path.dirname(os.path.abspath(options_file))
    mix = mix_beside(folder)
    if mix is None:
        return
    n = module.scalar_mix.n_layers
    if len(mix.mix_logits) != n:
        raise ExportError(
            f"{os.path.join(folder, MIX_FILE)}: mix_logits: expected {n} "
            f"values (one per layer), found {len(mix.mix_logits)}")
    # softmax(w + 1/L) is softmax(w): the logits are taken as they are
    module.scalar_mix.scalar_weights.assign(list(mix.mix_logits))
    module.scalar_mix.gamma.assign([mix.gamma])


def export_hub_from_save_dir(
    *,
    save_dir: str | os.PathLike | DetectedModel,
    outdir: str | os.PathLike,
    vocab_file: Optional[str | os.PathLike] = None,
    trainable_lm: bool = False,
    overwrite: bool = False,
    l2_coef: Optional[float] = None,
    checkpoint: Optional[str] = None,
    precision: str = DEFAULT_PRECISION,
) -> str:
    """Exports the latest checkpoint of a training ``save_dir``, ours or
    bilm-tf's, or a Paddle checkpoint.

    A Paddle checkpoint is a ``.pdparams``, its run's save_dir, or a
    persistables directory. The checkpoint goes through
    :func:`bilm_keras.save_dirs.weight_dump.dump_weights`, into a temporary
    directory, and then :func:`export_hub`. So the exported model is
    exactly the one ``bin/dump_weights.py`` and
    :class:`~bilm_keras.BidirectionalLanguageModel` give. The
    ``options.json`` asset is the prediction one, with ``n_characters``
    262. A converted ELMoForManyLangs model keeps its own, and its
    dictionaries ship too.

    ``checkpoint``: the checkpoint to export, e.g. ``model-200``. None
    means the newest, which must read whole. A damaged newest one is
    refused, naming the newest that does. ``save_dir`` may be a
    :class:`~bilm_keras.weights.model_detection.DetectedModel`, detected
    already (its checkpoint chosen then). Other arguments as
    :func:`export_hub`.

    Raises:
        CheckpointError, CheckpointFileError: no checkpoint in
            ``save_dir``, a damaged one, or one that does not fit its
            ``options.json``.
    """
    # imported here: the training stack is not needed to export HDF5 files
    from bilm_keras.save_dirs.weight_dump import dump_weights
    from bilm_keras.weights.model_detection import (
        ModelDetectionError,
        as_detected,
    )

    outdir = os.path.abspath(os.fspath(outdir))
    _check_outdir(outdir, overwrite)
    try:
        model = as_detected(save_dir, checkpoint=checkpoint)
    except ModelDetectionError as e:
        message = str(e)
        if os.path.isdir(save_dir) and not os.path.isfile(
                os.path.join(save_dir, OPTIONS_FILE)):
            message = f"{save_dir}: no {OPTIONS_FILE} in the save_dir"
        raise ExportError(message) from None
    if not model.is_paddle and model.options_file is None:
        raise ExportError(f"{model.given}: no {OPTIONS_FILE} in the "
                          "save_dir")
    with tempfile.TemporaryDirectory(prefix="bilm_export_") as tmp:
        files = dump_weights(model, os.path.join(tmp, "lm_weights.hdf5"))
        return export_hub(
            options_file=files["options_file"],
            weight_file=files["weight_file"], outdir=outdir,
            vocab_file=vocab_file, trainable_lm=trainable_lm,
            overwrite=overwrite, l2_coef=l2_coef, precision=precision,
        )
