"""ELMoEmbedding: a pretrained biLM as a Keras 3 layer of a user's model."""

from __future__ import annotations

import os
from typing import Optional, Sequence

import logging

import keras
import numpy as np
import tensorflow as tf

from bilm_keras._utils.backends import (
    PREPROCESSOR,
    backend,
    concrete_jax_arrays,
    on_tensorflow,
    reject_strings,
)
from bilm_keras._utils.graph_function import graph_function
from bilm_keras._utils.settings import check_int
from bilm_keras.export.text_ids import graph_converter, strings_to_ids
from bilm_keras.keras_layer.keras_presets import (
    FORMAT_KEY,
    FORMAT_VERSION,
    check_format_version,
    save_to_preset,
)
from bilm_keras.keras_layer.pretrained_layer import pretrained_layer
from bilm_keras.keras_layer.token_cache import TOKEN_CACHE_SIZE, TokenCache
from bilm_keras.export.token_mask import TokenMask
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.layers.scalar_mix import ScalarMix
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.models.lm_embeddings import lm_layers, strip_boundaries
from bilm_keras.options import BiLMOptions
from bilm_keras.weights.learned_mix import MIX_FILE, LearnedMix

logger = logging.getLogger(__name__)

#: the choices of ``output``
OUTPUTS = ("mix", "layers", "sentence")
#: the choices of ``trainable``
TRAINABLE = ("mix", "all", False)
#: the arguments ``from_pretrained`` hands on to the facade's
PRETRAINED_KWARGS = ("vocab_file", "cache_dir", "mirror", "progress",
                     "alignment")
#: layer_norm's epsilon, bilm-tf's ``_do_ln``
LAYER_NORM_EPSILON = 1e-12
#: the layer's own entry in a ``.keras`` file: each biLM weight's shape
_SHAPES_KEY = "bilm_weight_shapes"


@keras.saving.register_keras_serializable(package="bilm_keras")
class ELMoEmbedding(keras.layers.Layer):
    """ELMo in a Keras model: text or ids in, the biLM's mixed layers out.

    ``mix = gamma * sum_l softmax(w)_l * f(layer_l)``, as bilm-tf's
    ``weight_layers``. The ``L + 1`` weights ``w`` start at zero and
    ``gamma`` at one, so an untrained mix is the layers' mean. ``f`` is the
    identity. With ``layer_norm`` it normalises each layer by one mean and
    variance over its sentence's tokens and features. In bilm-tf they come
    from the whole batch, which would make a sentence's vectors depend on
    its neighbours.

    A sentence's vectors do not depend on its batch: not on the batch
    size, the other sentences or the padding width. With a frozen biLM
    (``trainable="mix"`` or False, or any call outside training) the LSTMs
    run the inference path of bulk embedding, in ``fit`` too, see
    :meth:`~bilm_keras.layers.lstm_stack.LSTMStack.infer`. With
    ``trainable="all"`` a training call runs the backbone's
    differentiable while loop. The char-CNN embeds each distinct token of
    a batch once. With the biLM frozen, a training call keeps each
    token's vector in a :class:`~bilm_keras.keras_layer.token_cache.TokenCache`
    and computes only the tokens it has not met, so later epochs skip the
    char-CNN for known tokens.

    The layer holds the biLM's options, weights and dictionaries, so a
    ``.keras`` file of a model that uses it stands alone. Build it with
    :meth:`from_pretrained` (or :meth:`from_preset`, the same), and save
    it as a keras-hub preset with :meth:`save_to_preset`. The constructor
    builds a biLM of random weights from ``options``, as
    ``keras.models.load_model`` does before it reads the file's weights.

    Args:
        options: dict. The biLM's ``options.json``, as
            :meth:`BiLMOptions.to_dict` writes it.
        output: str. ``"mix"``, ``"layers"`` or ``"sentence"``. It is kept
            as :attr:`output_mode`, since ``output`` is a Keras property.
        trainable: ``"mix"``, ``"all"`` or False. ``"mix"`` trains the
            ``L + 1`` mix weights and gamma, ``"all"`` the biLM too, False
            nothing.
        layer_norm: bool. Normalise each layer before the mix.
        dropout: float. Dropout rate on the output in training.
        l2_coef: float or None. ``l2_coef * sum(w**2)`` joins the layer's
            losses and so ``model.losses``.
        vocabulary: list of str or None. A word-input model's vocabulary
            in id order.
        char_dic: dict or None. A converted ELMoForManyLangs model's
            ``char.dic``, token to id.
        word_dic: dict or None. Its ``word.dic``, None without a word part.
        alignment_matrices: int. 0, or the number of cross-lingual
            alignment matrices `(dim, dim)` the layer holds, 1 for every
            layer or ``L + 1``, one per layer. Each layer ``h`` becomes
            ``h @ W.T`` before the mix. They start as the identity and
            are never trained: :meth:`from_pretrained` copies them in.
        token_cache_size: int >= 0. Distinct tokens whose vectors the
            training calls keep, 0 for none. A character model only.

    Call arguments:
        inputs: `(batch,)` tf.string sentences, split on whitespace as
            ``str.split()``. Or `(batch, time)` tf.string tokens, padded at
            the end with ``""``. Or int32 ids from the model's batcher,
            `(batch, time + 2, ids_width)` for a character model and
            `(batch, time + 2)` for a word-input model. Or float layers
            cached once, which only the mix reads. They are
            `(batch, L + 1, time, dim)` as ``"layers"`` gives them, zero
            past each sentence's end, see
            :func:`~bilm_keras.keras_layer.cached_layers.cached_layers_dataset`.
        training: bool. Dropout, and the LM's gradients with
            ``trainable="all"``.

    Returns:
        ``"mix"``: `(batch, time, dim)` with a Keras mask `(batch, time)`.
        ``"layers"``: `(batch, L + 1, time, dim)`. ``"sentence"``: the
        masked mean of the mix, `(batch, dim)`. ``dim`` is ``2 *
        projection_dim`` and ``time`` the most tokens in a sentence, or
        the input's width for padded tokens. Positions past a sentence's
        end are zero.

    Example:
        >>> text = keras.Input(shape=(), dtype="string")
        >>> elmo = ELMoEmbedding.from_pretrained("model_dir")(text)
        >>> tags = keras.layers.Dense(5, activation="softmax")(elmo)
        >>> model = keras.Model(text, tags)

    Reference:
        Peters et al., "Deep contextualized word representations", 2018,
        section 3.3.
    """

    # Twelve parameters, by design: a Keras layer's config is its
    # constructor's arguments (keras-hub's backbones), and the model's
    # options and dictionaries travel in it so that a .keras file stands
    # alone.
    def __init__(
        self,
        options: dict,
        output: str = "mix",
        trainable="mix",
        layer_norm: bool = False,
        dropout: float = 0.0,
        l2_coef: Optional[float] = None,
        vocabulary: Optional[list] = None,
        char_dic: Optional[dict] = None,
        word_dic: Optional[dict] = None,
        alignment_matrices: int = 0,
        token_cache_size: int = TOKEN_CACHE_SIZE,
        **kwargs,
    ):
        check_choices(output, trainable)
        # get_config() carries the format version: ELMoEmbedding(**config)
        # takes it as from_config does, and refuses a newer one
        kwargs = check_format_version(
            kwargs, kwargs.get("name", "ELMoEmbedding"))
        super().__init__(trainable=trainable is not False, **kwargs)
        parsed = BiLMOptions.from_dict(options, source=f"{self.name}.options")
        self.options = parsed.to_dict()
        self.output_mode = output
        self.trainable_part = trainable
        self.layer_norm = layer_norm
        self.dropout = dropout
        self.l2_coef = l2_coef
        self.vocabulary = None if vocabulary is None else list(vocabulary)
        self.char_dic = None if char_dic is None else dict(char_dic)
        self.word_dic = None if word_dic is None else dict(word_dic)
        self._graph_ids = self._graph_ids_for(parsed)
        use_chars = parsed.use_character_inputs
        self.bilm = BiLMBackbone.from_options(
            parsed, use_character_inputs=use_chars,
            n_tokens_vocab=None if use_chars else len(self.vocabulary),
            name="bilm").build_all()
        self.n_layers = self.bilm.n_layers + 1  # L + 1, token layer too
        self.dim = self.bilm.projection_dim * len(self.bilm.directions)
        if alignment_matrices not in (0, 1, self.n_layers):
            raise ValueError(
                f"{self.name}: alignment_matrices: expected 0, 1 or "
                f"{self.n_layers} (one per layer), found "
                f"{alignment_matrices!r}")
        self.alignment_matrices = alignment_matrices
        self.alignment = None
        if alignment_matrices:
            self.alignment = self.add_weight(
                name="alignment", trainable=False,
                shape=(alignment_matrices, self.dim, self.dim),
                initializer=lambda shape, dtype=None: keras.ops.tile(
                    keras.ops.eye(shape[1], dtype=dtype)[None],
                    (shape[0], 1, 1)))
        self.scalar_mix = ScalarMix(self.n_layers, l2_coef=l2_coef,
                                    name="scalar_mix")
        self.scalar_mix.build()
        self.output_dropout = keras.layers.Dropout(dropout, name="dropout")
        if trainable != "all":
            self.bilm.trainable = False
        if trainable is False:
            # a layer made untrainable by its constructor does not pass
            # that on to sublayers made after it: a model would train them
            self.scalar_mix.trainable = False
        self.supports_masking = output == "mix"
        # under TensorFlow: string ops, hash tables and loops of
        # data-dependent length, so a model holding the layer is not
        # compiled with XLA ("auto" on GPU); JAX and PyTorch take ids
        # only, and JAX compiles the model's step (jax.jit)
        self.supports_jit = not on_tensorflow()
        self._layers_graph = None  # embed_layers' graph, on first use
        check_int("token_cache_size", token_cache_size, 0)
        self.token_cache_size = token_cache_size
        cached = token_cache_size and self.ids_width is not None
        if cached and not on_tensorflow():
            # a TensorFlow hash table: JAX's compiled step has no state of
            # a data-dependent size
            logger.info(
                "%s: the token cache runs under TensorFlow only; under "
                "KERAS_BACKEND=%s every training call runs the char-CNN",
                self.name, backend())
            cached = False
        # outside Keras' tracking: no .keras file or export holds the table
        self.__dict__["_token_cache"] = (
            TokenCache(token_cache_size, self.bilm.projection_dim)
            if cached else None)
        self.built = True

    @classmethod
    def from_config(cls, config):
        # a config is rebuilt to load weights into (keras.models.load_model):
        # zeros, not random draws, which JAX would compile one program for
        # each weight's shape to make; a newer format version is refused
        config = check_format_version(config, config.get("name", ""))
        with placeholder_weights():
            return cls(**config)

    def _graph_ids_for(self, options: BiLMOptions):
        """The in-graph tokenizer of a ManyLangs or word-input model."""
        if (options.use_character_inputs and options.manylangs is not None
                and self.char_dic is None):
            raise ValueError(
                f"{self.name}: char_dic: a converted ELMoForManyLangs "
                "model needs its char.dic, found None")
        return graph_converter(
            use_character_inputs=options.use_character_inputs,
            max_characters_per_token=(
                options.char_cnn.max_characters_per_token
                if options.char_cnn is not None else None),
            vocabulary=self.vocabulary, char_dic=self.char_dic,
            word_dic=self.word_dic, owner=self.name)

    # ------------------------------------------------------------ factory
    @classmethod
    def from_pretrained(
        cls,
        spec: str | os.PathLike,
        output: str = "mix",
        trainable="mix",
        *,
        layer_norm: bool = False,
        dropout: float = 0.0,
        l2_coef: Optional[float] = None,
        token_cache_size: int = TOKEN_CACHE_SIZE,
        name: str = "elmo",
        **pretrained_kwargs,
    ) -> "ELMoEmbedding":
        """The layer of a pretrained biLM, its weights read in.

        Args:
            spec: anything :meth:`BidirectionalLanguageModel.from_pretrained`
                takes: a registry name, a URL, an
                ``hf://OWNER/REPO[@REVISION]`` handle, an archive or a
                model folder. Or a Keras preset, a folder or ``hf://``
                handle (:meth:`save_to_preset`). The folder may be
                bilm-tf's or a converted ManyLangs, Paddle or TF1 Hub
                model. Or a training save_dir, ours or bilm-tf's, a folder
                with ``options.json`` and checkpoints but no weights HDF5.
                Its newest checkpoint that reads whole is read straight
                into the layer, the model ``dump-weights`` writes.
            output, trainable, layer_norm, dropout, l2_coef,
                token_cache_size: the layer's.
            name: the layer's name.
            **pretrained_kwargs: ``vocab_file``, ``cache_dir``, ``mirror``,
                ``progress`` and ``alignment`` of ``from_pretrained``. The
                alignment's matrices are copied into the layer, which maps
                each layer ``h`` to ``h @ W.T`` before the mix. A save_dir
                is read in place: ``cache_dir``, ``mirror`` and
                ``progress`` do not apply, and ``vocab_file`` is what a
                word-input model needs.

        The mix starts from the model's learned one where its folder has
        ``mix.json`` (a converted TF1 Hub module), so ``output="mix"`` is
        the module's own ``elmo`` before any training. Otherwise the
        weights start at zero and gamma at one.

        Raises:
            ValueError: an unknown ``output`` or ``trainable``, before any
                file is read, or a ``mix.json`` of another number of
                layers.
            PretrainedModelError: a ``spec`` that names no model.
            CheckpointError: a save_dir whose checkpoint does not fit its
                options.
        """
        check_choices(output, trainable)
        unknown = sorted(set(pretrained_kwargs) - set(PRETRAINED_KWARGS))
        if unknown:
            raise TypeError(
                f"from_pretrained: unexpected {unknown}, expected the "
                f"layer's options or {PRETRAINED_KWARGS}")
        return pretrained_layer(cls, spec, dict(
            output=output, trainable=trainable, layer_norm=layer_norm,
            dropout=dropout, l2_coef=l2_coef, name=name,
            token_cache_size=token_cache_size), **pretrained_kwargs)

    @classmethod
    def from_preset(cls, spec, output: str = "mix", trainable="mix",
                    **kwargs) -> "ELMoEmbedding":
        """keras-hub's name for :meth:`from_pretrained`: the same SPECs,
        a preset folder or ``hf://`` handle among them, and arguments."""
        return cls.from_pretrained(spec, output, trainable, **kwargs)

    def save_to_preset(self, preset_dir, *, overwrite: bool = False):
        """Writes the layer as a keras-hub preset: ``config.json``,
        ``model.weights.h5``, ``preprocessor.json``, ``metadata.json``
        and ``assets/tokenizer/``, whole or not at all.

        :meth:`from_preset` reads it back, and so does
        ``keras_hub.models.Backbone.from_preset`` with keras-hub
        installed.

        Raises:
            ValueError: a non-empty ``preset_dir`` without ``overwrite``.
        """
        save_to_preset(self, preset_dir, overwrite=overwrite)

    def _start_from_mix(self, mix: LearnedMix, spec) -> None:
        """Sets the mix's weights and gamma to a model's learned mix."""
        if len(mix.mix_logits) != self.n_layers:
            raise ValueError(
                f"{spec}: {MIX_FILE}: mix_logits: expected {self.n_layers} "
                f"values (one per layer), found {len(mix.mix_logits)}")
        # softmax(w + 1/L) is softmax(w): the logits are taken as they are
        self.scalar_mix.scalar_weights.assign(list(mix.mix_logits))
        self.scalar_mix.gamma.assign([mix.gamma])

    # -------------------------------------------------------------- inputs
    @property
    def ids_width(self) -> Optional[int]:
        """Ids per token of the batcher's ids, None for a word model."""
        return self.bilm.ids_width

    def _check_input(self, shape, dtype) -> None:
        """Raises for inputs the layer cannot read, naming them."""
        rank = len(shape)
        if dtype == "string":
            if rank not in (1, 2):
                raise ValueError(
                    f"{self.name}: inputs: expected tf.string sentences "
                    "(batch,) or padded tokens (batch, time), found rank "
                    f"{rank} {tuple(shape)}")
            return
        if dtype.startswith("float"):
            expected = (self.n_layers, self.dim)
            if rank != 4 or (shape[1], shape[3]) != expected:
                raise ValueError(
                    f"{self.name}: inputs: expected cached layers (batch, "
                    f"{self.n_layers}, time, {self.dim}), found "
                    f"{tuple(shape)}")
            return
        if not dtype.startswith("int"):
            raise ValueError(
                f"{self.name}: inputs: expected tf.string, integer ids or "
                f"float cached layers, found {dtype}")
        width = self.ids_width
        expected_rank = 2 if width is None else 3
        if rank != expected_rank:
            raise ValueError(
                f"{self.name}: inputs: expected the batcher's ids of rank "
                f"{expected_rank}, found rank {rank} {tuple(shape)}")
        if width is not None and shape[-1] is not None \
                and shape[-1] != width:
            raise ValueError(
                f"{self.name}: inputs: expected {width} ids per token (the "
                f"model's ids_width), found {shape[-1]}")

    def token_ids(self, inputs):
        """The batcher's ids of any input, boundaries included: `(batch,
        time + 2, ids_width)`, or `(batch, time + 2)` for a word model.

        Strings are read under TensorFlow only. Under JAX and PyTorch they
        raise a TypeError naming the preprocessor."""
        if not on_tensorflow():
            reject_strings(self.name, inputs)
            self._check_input(inputs.shape, keras.backend.standardize_dtype(
                inputs.dtype))
            return keras.ops.cast(inputs, "int32")
        inputs = tf.convert_to_tensor(inputs)
        self._check_input(inputs.shape, inputs.dtype.name)
        if inputs.dtype != tf.string:
            return tf.cast(inputs, tf.int32)
        return strings_to_ids(inputs, self._graph_ids,
                              self.bilm.max_characters_per_token)

    # --------------------------------------------------------------- graph
    def _embed_tokens(self, ids, training=False):
        """Token embeddings `(B, T, P)`, each distinct token once, from
        the token cache in a training call with the char-CNN frozen."""
        # B=batch, T=time, W=ids per token, U=distinct tokens, P=proj dim
        if not on_tensorflow():
            # every token: JAX compiles static shapes, so no tf.unique
            return self.bilm.embed_tokens(ids)  # (B, T, P)
        shape = tf.shape(ids)
        width = 1 if self.ids_width is None else self.ids_width
        flat = tf.reshape(ids, (-1, width))  # (B*T, W)
        # a padding row first: the char-CNN never runs on zero tokens
        flat = tf.concat([tf.zeros((1, width), flat.dtype), flat], 0)
        unique, index = tf.raw_ops.UniqueV2(
            x=flat, axis=tf.constant([0], tf.int64))  # (U, W), (1+B*T,)
        # UniqueV2 and the cache's lookups lose the rank, which the
        # keras.ops layers read
        rank = [None] if self.ids_width is None else [None, width]
        if self.ids_width is None:
            unique = unique[:, 0]  # (U,)
        unique = tf.ensure_shape(unique, rank)
        if self._uses_token_cache(training):
            table = self._token_cache.vectors(
                unique, lambda ids: self.bilm.embed_tokens(
                    tf.ensure_shape(ids, rank)[None])[0],
                self.bilm.token_embedder.weights)  # (U, P)
        else:
            table = self.bilm.embed_tokens(unique[None])[0]  # (U, P)
        return tf.reshape(tf.gather(table, index[1:]),
                          tf.concat([shape[:2], [-1]], 0))  # (B, T, P)

    def _differentiable(self, training) -> bool:
        """Whether a call runs the biLM for its gradients."""
        return bool(training and self.trainable_part == "all"
                    and self.bilm.trainable)

    def _uses_token_cache(self, training) -> bool:
        """Whether a call reads its token vectors through the token cache:
        a training call with the biLM frozen. A call outside training, as
        ``predict`` and ``model.export`` trace it, computes them."""
        return (self._token_cache is not None and bool(training)
                and not self._differentiable(training))

    def _lstm_outputs(self, token_embeddings, lengths, training):
        """Each direction's layers `(B, T, P)`, natural time order."""
        if self._differentiable(training):
            outputs, _ = self.bilm.encode(token_embeddings, lengths,
                                          training=True)
            return outputs
        return self.bilm.infer(keras.ops.stop_gradient(token_embeddings),
                               lengths)

    def lm_layers(self, inputs, training=False):
        """The biLM's layers of any input, aligned if the layer holds an
        alignment, before the mix.

        Returns:
            ``(layers (batch, L + 1, time, dim), mask (batch, time) bool)``,
            zero past each sentence's end.
        """
        ids = self.token_ids(inputs)
        full_mask = self.bilm.input_mask(ids)  # (B, T + 2)
        lengths = keras.ops.sum(keras.ops.cast(full_mask, "int32"), axis=1)
        token_embeddings = self._embed_tokens(ids, training)  # (B, T+2, P)
        outputs = self._lstm_outputs(token_embeddings, lengths, training)
        outputs["token_embeddings"] = token_embeddings
        layers, _, mask = strip_boundaries(lm_layers(outputs), lengths)
        if self.alignment is not None:  # h @ W.T, zeros stay zeros
            if self.alignment_matrices == 1:
                layers = keras.ops.einsum("bltd,ed->blte", layers,
                                          self.alignment[0])
            else:
                layers = keras.ops.einsum("bltd,led->blte", layers,
                                          self.alignment)
        return layers, mask

    def embed_layers(self, sentences: Sequence[Sequence[str]],
                     batch_size: int = 64) -> list[np.ndarray]:
        """Each sentence's biLM layers, computed once to train the mix and
        a head from them (in memory: a small set).

        The sentences run sorted by length, ``batch_size`` at a time,
        through the graph ``call`` runs, so each array is what ``output=
        "layers"`` gives that sentence.

        Args:
            sentences: token lists, each token a non-empty string.
            batch_size: int, sentences per call.

        Returns:
            One `(L + 1, n_tokens, dim)` float32 array per sentence, in
            order.
        """
        for i, sentence in enumerate(sentences):
            if any(not isinstance(t, str) or not t for t in sentence):
                raise ValueError(f"sentences[{i}]: expected non-empty "
                                 f"string tokens, found {sentence!r}")
        if not on_tensorflow():
            raise TypeError(
                f"{self.name}: embed_layers reads strings, under TensorFlow "
                f"only (found KERAS_BACKEND={backend()}); turn them into "
                f"ids with {PREPROCESSOR} and call the layer with "
                "output='layers'")
        if self._layers_graph is None:
            self._layers_graph = graph_function(
                lambda tokens: self.lm_layers(tokens)[0],
                input_signature=[tf.TensorSpec((None, None), tf.string)])
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        results = [None] * len(sentences)
        for start in range(0, len(order), batch_size):
            rows = order[start: start + batch_size]
            width = max(1, max(len(sentences[i]) for i in rows))
            tokens = np.full((len(rows), width), "", dtype=object)
            for r, i in enumerate(rows):
                tokens[r, : len(sentences[i])] = list(sentences[i])
            layers = self._layers_graph(tf.constant(tokens, tf.string))
            layers = layers.numpy()  # (B, L + 1, T, D)
            for r, i in enumerate(rows):
                results[i] = layers[r, :, : len(sentences[i])].copy()
        return results

    def mix(self, layers, mask, training=False):
        """The learned mix of :meth:`lm_layers`' output, as ``call``
        computes it: `(batch, L + 1, time, dim)` -> `(batch, time, dim)`,
        e.g. on layers cached once."""
        ops = keras.ops
        layers = ops.cast(layers, "float32")
        mask = ops.cast(mask, "bool")
        mask_f = ops.cast(mask, "float32")[:, None, :, None]  # (B,1,T,1)
        if self.layer_norm:
            # per sentence: one mean and variance over its tokens and dims
            n = ops.sum(mask_f, axis=2, keepdims=True) * self.dim
            n = ops.maximum(n, 1.0)  # (B, 1, 1, 1)
            mean = ops.sum(layers * mask_f, axis=(2, 3),
                           keepdims=True) / n  # (B, L, 1, 1)
            var = ops.sum(((layers - mean) * mask_f) ** 2,
                          axis=(2, 3), keepdims=True) / n
            layers = (layers - mean) * ops.rsqrt(
                var + LAYER_NORM_EPSILON) * mask_f
        mixed = self.scalar_mix(layers, mask)  # (B, T, D)
        mixed = mixed * mask_f[:, 0]
        return self.output_dropout(mixed, training=training)

    def __call__(self, inputs, *args, **kwargs):
        # before Keras converts the input: JAX and PyTorch have no string
        # tensors, and their conversion error would not say what to do
        reject_strings(self.name, inputs)
        if (self.built and not args and not kwargs.get("training")
                and set(kwargs) <= {"training"}
                and concrete_jax_arrays(inputs)):
            return self._compiled_jax_call(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def _compiled_jax_call(self, inputs):
        """An eager inference call under JAX, through ``jax.jit``: op by
        op, JAX traces and compiles the recurrence's loop anew at every
        call (seconds each, even for a tiny model). Compiled once per
        input shape, as ``model.predict`` does, a repeated call takes
        milliseconds. The same arithmetic: ``stateless_call`` runs
        ``call``."""
        import jax

        if getattr(self, "_jax_inference", None) is None:
            def run(trainable, non_trainable, x):
                return self.stateless_call(trainable, non_trainable, x)[0]

            self._jax_inference = jax.jit(run)
        outputs = self._jax_inference(
            [v.value for v in self.trainable_variables],
            [v.value for v in self.non_trainable_variables], inputs)
        # the mask Keras' own __call__ attaches to an eager output
        self._set_mask_metadata(inputs, outputs, None)
        return outputs

    def call(self, inputs, training=False):
        ops = keras.ops
        if keras.backend.standardize_dtype(inputs.dtype).startswith(
                "float"):  # cached layers
            self._check_input(inputs.shape, keras.backend.standardize_dtype(
                inputs.dtype))
            layers = ops.cast(inputs, "float32")
            mask = ops.any(ops.not_equal(layers[:, 0], 0.0), axis=-1)
        else:
            layers, mask = self.lm_layers(inputs, training=training)
        if self.output_mode == "layers":
            return layers
        mixed = self.mix(layers, mask, training=training)
        if self.output_mode == "mix":
            return mixed
        n = ops.sum(ops.cast(mask, "float32"), axis=1, keepdims=True)
        return ops.sum(mixed, axis=1) / ops.maximum(n, 1.0)  # (B, D)

    def compute_mask(self, inputs, mask=None):
        if self.output_mode != "mix":
            return None
        if keras.backend.standardize_dtype(inputs.dtype) == "string":
            # a layer, not a tf op, so that a functional model records it
            return TokenMask()(inputs)
        if "float" in str(inputs.dtype):
            # cached layers: zero past a sentence's end, in every layer
            return keras.ops.any(keras.ops.not_equal(inputs[:, 0], 0),
                                 axis=-1)  # (B, T)
        # keras.ops: the same in a functional model and on tensors; token
        # t sits at position t + 1, and is real when position t + 2 holds
        # a token or </S>
        valid = keras.ops.greater(inputs, 0)  # (B, T + 2[, W])
        if self.ids_width is not None:
            valid = keras.ops.any(valid, axis=-1)  # (B, T + 2)
        return valid[:, 2:]  # (B, T)

    def compute_output_shape(self, input_shape, dtype="string"):
        """The output's shape. ``dtype`` tells a word-input model's padded
        tokens `(batch, time)` from its ids `(batch, time + 2)`."""
        batch = input_shape[0]
        if len(input_shape) == 4:  # cached layers
            time = input_shape[2]
        elif len(input_shape) == 2 and "string" in str(dtype):
            time = input_shape[1]  # padded tokens keep their width
        elif len(input_shape) == 1:
            time = None
        else:  # ids, with <S> and </S>
            time = None if input_shape[1] is None else input_shape[1] - 2
        if self.output_mode == "layers":
            return (batch, self.n_layers, time, self.dim)
        if self.output_mode == "sentence":
            return (batch, self.dim)
        return (batch, time, self.dim)

    def compute_output_spec(self, inputs, training=False):
        self._check_input(inputs.shape, keras.backend.standardize_dtype(
            inputs.dtype))
        return keras.KerasTensor(
            self.compute_output_shape(inputs.shape, inputs.dtype),
            dtype="float32")

    def build(self, input_shape=None):
        pass  # built in the constructor, weights loaded after

    # ------------------------------------------------------------- saving
    def save_own_variables(self, store):
        super().save_own_variables(store)
        shapes = [list(w.shape) for w in self.bilm.weights]
        rank = max(len(s) for s in shapes)
        store[_SHAPES_KEY] = np.array(
            [s + [-1] * (rank - len(s)) for s in shapes], np.int64)

    def load_own_variables(self, store):
        if _SHAPES_KEY in store:
            self._check_stored_shapes(np.asarray(store[_SHAPES_KEY]))
            store = {k: store[k] for k in store.keys() if k != _SHAPES_KEY}
        super().load_own_variables(store)

    def _check_stored_shapes(self, stored: np.ndarray) -> None:
        """Raises when the file's weights do not fit its options."""
        weights = self.bilm.weights
        found = [tuple(int(d) for d in row if d >= 0) for row in stored]
        if len(found) != len(weights):
            raise ValueError(
                f"{self.name}: the saved options describe a biLM of "
                f"{len(weights)} weights, its weights hold {len(found)}")
        for weight, shape in zip(weights, found):
            if tuple(weight.shape) != shape:
                raise ValueError(
                    f"{self.name}: the saved options disagree with "
                    f"its weights: {weight.path}: expected "
                    f"{tuple(weight.shape)} from the options, found {shape}")

    def get_config(self):
        config = super().get_config()
        config.update(
            options=self.options,
            output=self.output_mode,
            trainable=self.trainable_part if self.trainable else False,
            layer_norm=self.layer_norm,
            dropout=self.dropout,
            l2_coef=self.l2_coef,
            vocabulary=self.vocabulary,
            char_dic=self.char_dic,
            word_dic=self.word_dic,
            alignment_matrices=self.alignment_matrices,
            token_cache_size=self.token_cache_size,
        )
        config[FORMAT_KEY] = FORMAT_VERSION
        return config


def check_choices(output, trainable) -> None:
    """Raises for an unknown ``output`` or ``trainable``."""
    if output not in OUTPUTS:
        raise ValueError(
            f"output: expected one of {OUTPUTS}, found {output!r}")
    if trainable is True or trainable not in TRAINABLE:
        raise ValueError(
            f"trainable: expected one of {TRAINABLE} ('mix': the L + 1 "
            "weights and gamma, TF-Hub's trainable=True; 'all': the biLM "
            f"too), found {trainable!r}")
