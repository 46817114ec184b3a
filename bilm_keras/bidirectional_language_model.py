"""The inference facade with bilm-tf's constructor (options + HDF5
weights), or a published model by name
(:meth:`BidirectionalLanguageModel.from_pretrained`).

It stands above the models, the weight files, the published models and
the bulk embedding path, see ``docs/architecture.md``. It only composes
them. :func:`~bilm_keras.pretrained.resolve_model` finds a model's files
and downloads, converts and caches them. :func:`~bilm_keras.models.
backbone_loading.load_backbone` builds and loads the backbone. A
:class:`~bilm_keras.embedding.bulk_embedder.BulkEmbedder` embeds many
sentences with it.
"""

from __future__ import annotations

import logging
import os
import tempfile
from typing import (
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
)

import numpy as np
import tensorflow as tf

from bilm_keras._utils.fast_precision import DEFAULT_PRECISION
from bilm_keras._utils.eager import require_eager
from bilm_keras._utils.graph_function import graph_function
from bilm_keras._utils.settings import SettingError
from bilm_keras.data.batcher_for_options import batcher_for_options
from bilm_keras.data.long_tokens import limit_for_batcher, warn_of_long_tokens
from bilm_keras.embedding.bulk_embedder import BulkEmbedder
from bilm_keras.embedding.dump import dump_token_embeddings
from bilm_keras.embedding.memory import return_freed_memory_for_bulk_embedding
from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.embedding.shards import CHUNK_SIZE
from bilm_keras.models.backbone_loading import load_backbone
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.models.lm_embeddings import lm_layers, strip_boundaries
from bilm_keras.options import BiLMOptions
from bilm_keras.weights.alignment import (
    Alignment, alignment_files, read_alignment)
from bilm_keras.weights.learned_mix import LearnedMix, mix_beside
from bilm_keras.pretrained import (
    ResolvedModel,
    check_before_download,
    resolve_model,
)
from bilm_keras.save_dirs.save_dir_models import load_save_dir_model
from bilm_keras.save_dirs.weight_dump import prediction_options
from bilm_keras.weights.checkpoint_files import list_checkpoints
from bilm_keras.weights.model_detection import (
    OUR_RUN,
    DetectedModel,
    detect_model,
)


class BidirectionalLanguageModel:
    """A pretrained biLM loaded from bilm-tf files, ready to embed.

    Args:
        options_file: path. bilm-tf's ``options.json``.
        weight_file: path. bilm-tf's ``lm_weights.hdf5``.
        use_character_inputs: bool. True takes char ids, False token ids.
        embedding_weight_file: path or None. For token input, the HDF5
            file of :func:`~bilm_keras.dump_token_embeddings`, with the
            dataset ``embedding``.
        stateful: bool. False, the default: every call starts from zero
            states, so a sentence always gets the same vectors. True:
            bilm-tf's behaviour, where row ``k``'s final LSTM states start
            row ``k`` of the next call and rows past the batch keep theirs.
        max_batch_size: int. Rows of the stateful state buffers.
        precision: str. What the products compute in, see
            :mod:`~bilm_keras.layers.precision`. ``"float32"`` is the
            default, exact as bilm-tf. ``"bfloat16"`` ran at 2.4-3.0x
            float32's speed on a 2-vCPU AMX Xeon. Its per-token cosine to
            float32's vectors had a median >= 0.9999 and a worst token
            of 0.9994 on the models measured, see ``docs/performance.md``,
            "Precision". ``"float16"`` is for GPUs.
            The weights stay float32 and every output is float32. A
            precision this machine does not run fast is logged once as a
            warning naming what is missing.

    It runs eagerly (TensorFlow 2): built or called inside
    ``tf.compat.v1.Graph().as_default()`` or after
    ``tf.compat.v1.disable_eager_execution()`` it raises
    :class:`~bilm_keras._utils.eager.GraphModeError` (bilm-tf's session code
    would silently compute with re-initialised weights).

    A converted ELMoForManyLangs model (``bilm-keras convert-manylangs``)
    loads the same way: its options name its dictionaries, and
    :meth:`embed_sentences` reads tokens through its
    :class:`~bilm_keras.data.manylangs_batcher.ManyLangsBatcher`.

    It is called on ids, numpy or tensor, and :meth:`make_batcher` gives
    the right batcher. Ids from :class:`Batcher` are
    `(batch, time + 2, max_chars)`. Ids from :class:`ManyLangsBatcher`,
    for a model with a word part, are `(batch, time + 2, max_chars + 1)`.
    Ids from :class:`TokenBatcher` are `(batch, time + 2)`. It returns a
    dict:

    * ``lm_embeddings``: `(batch, n_lm_layers + 1, time, 2 * projection_dim)`,
      ``<S>``/``</S>`` removed, zero past each row's length.
    * ``mask``: `(batch, time)` bool.
    * ``lengths``: `(batch,)` int32.
    * ``token_embeddings``: `(batch, time + 2, projection_dim)`.

    Example:
        >>> bilm = BidirectionalLanguageModel("options.json", "weights.hdf5")
        >>> ids = Batcher("vocab.txt", 50).batch_sentences([["Hi", "!"]])
        >>> bilm(ids)["lm_embeddings"].shape
        TensorShape([1, 3, 2, 1024])
        >>> bilm = BidirectionalLanguageModel.from_pretrained("elmo-original")
        >>> bilm.embed_sentences([["Hi", "!"]])[0].shape
        (3, 2, 1024)
    """

    #: the published model it was made from (:meth:`from_pretrained`),
    #: else None
    pretrained: Optional[ResolvedModel] = None
    #: the model's learned layer mix (:meth:`from_pretrained` of a folder
    #: with ``mix.json``, e.g. a converted TF1 Hub module), or None:
    #: ``output="mix"`` with no mix of its own uses it
    learned_mix: Optional[LearnedMix] = None
    #: the cross-lingual alignment applied to the output layers
    #: (:meth:`from_pretrained`'s ``alignment``), or None
    alignment: Optional[Alignment] = None
    #: the model's vocabulary (:meth:`from_pretrained` of a model that
    #: ships one), the default ``vocab_file`` of token input
    vocab_file: Optional[str] = None

    def __init__(
        self,
        options_file: str | os.PathLike,
        weight_file: str | os.PathLike,
        use_character_inputs: bool = True,
        embedding_weight_file: Optional[str | os.PathLike] = None,
        stateful: bool = False,
        max_batch_size: int = 128,
        precision: str = DEFAULT_PRECISION,
    ):
        require_eager("BidirectionalLanguageModel")
        self.options = BiLMOptions.from_json(options_file)
        backbone = load_backbone(
            self.options, weight_file,
            use_character_inputs=use_character_inputs,
            embedding_weight_file=embedding_weight_file,
            precision=precision)
        self.__init_from_backbone(backbone, stateful, max_batch_size)

    # Ten keywords, by design: the constructor's own (input, vocabulary,
    # state, batch) and the download's (cache, mirror, progress), each a
    # plain value a user sets alone; a settings object would make the
    # one-line use of the README take two lines.
    @classmethod
    def from_pretrained(
        cls,
        spec: str | os.PathLike,
        *,
        use_character_inputs: bool = True,
        vocab_file: Optional[str | os.PathLike] = None,
        embedding_weight_file: Optional[str | os.PathLike] = None,
        stateful: bool = False,
        max_batch_size: int = 128,
        cache_dir: Optional[str | os.PathLike] = None,
        mirror: Optional[str] = None,
        progress: Optional[bool] = None,
        precision: str = DEFAULT_PRECISION,
        alignment: Optional[str | os.PathLike | Sequence] = None,
    ) -> "BidirectionalLanguageModel":
        """A published model by name, ready to embed.

        It loads the files of :func:`~bilm_keras.pretrained.resolve_model`
        as the constructor does. They are downloaded once, and an
        ELMoForManyLangs model is converted once. After that they come
        from the cache with no network access.

        Args:
            spec: str or path. A registry name, an http(s) URL of an
                archive, a local archive or a model directory. A save_dir
                our training wrote is read as ``dump-weights`` then the
                constructor read it (character input, float32).
                ``bilm-keras models`` lists the names, such as
                ``"elmo-original"`` and ``"manylangs-zh"``.
            use_character_inputs, stateful, max_batch_size, precision: as
                the constructor's.
            vocab_file: path or None. The vocabulary of token input, by
                default the model's own where it ships one. Character input
                needs none.
            embedding_weight_file: path or None. For token input, the token
                table of ``vocab_file``, see
                :func:`~bilm_keras.dump_token_embeddings`.
                By default it is computed here from the model's char-CNN,
                with the same numbers. Pass the file to skip that work next
                time.
            cache_dir, mirror, progress: as
                :func:`~bilm_keras.pretrained.resolve_model`'s. The
                defaults are ``$BILM_KERAS_CACHE``,
                ``$BILM_KERAS_MODEL_MIRROR`` and progress on a terminal
                only.
            alignment: str, path, a sequence of them, or None. A
                cross-lingual alignment applied to the output layers of
                :meth:`embed_sentences` and :meth:`iter_embeddings` before
                any mix. Each layer ``h``
                becomes ``h @ W.T``. ``"published"`` takes an ``xling-*``
                model's own matrix. Else one matrix file ``torch.save``
                wrote for every layer, or one per output layer. Default
                None: none. ``bilm(ids)`` gives the layers as they are.

        Returns:
            The model. :attr:`pretrained` says which files it holds and
            where they came from.

        Raises:
            PretrainedModelError: an unknown name, a failed download, an
                unsafe archive, a model that cannot be converted. The
                message is one line and nothing is left in the cache.
            ValueError: token input without a vocabulary.
            AlignmentError: an alignment file that is not a matrix of the
                model's output size (named with its shape), or a
                ``"published"`` one for a model without it.

        Example:
            >>> bilm = BidirectionalLanguageModel.from_pretrained(
            ...     "manylangs-zh")
            >>> vectors = bilm.embed_sentences([["今天", "天氣", "很好"]])
        """
        run = _our_run(spec)
        if run is not None:
            return cls._from_our_run(
                run, use_character_inputs=use_character_inputs,
                stateful=stateful, max_batch_size=max_batch_size,
                precision=precision, vocab_file=vocab_file,
                embedding_weight_file=embedding_weight_file,
                alignment=alignment)
        check_before_download(
            spec, vocab_given=vocab_file is not None,
            vocab_flag="vocab_file=",
            token_input=not (use_character_inputs
                             or embedding_weight_file is not None))
        model = resolve_model(spec, cache_dir=cache_dir, mirror=mirror,
                              progress=progress)
        if vocab_file is None:
            vocab_file = model.vocab_file
        options = model.options  # parsed once, by resolve_model

        def loaded(use_characters: bool, table):
            # the constructor's work on the options already parsed
            backbone = load_backbone(
                options, model.weight_file,
                use_character_inputs=use_characters,
                embedding_weight_file=table, precision=precision)
            return cls.from_backbone(backbone, stateful=stateful,
                                     max_batch_size=max_batch_size,
                                     options=options)

        aligned = None if alignment is None else read_alignment(
            alignment_files(alignment, model.directory, model.name),
            n_layers=options.lstm.n_layers + 1,
            dim=2 * options.lstm.projection_dim)
        if options.char_cnn is None:
            # a word-input model (Paddle's baike model): its token table is
            # its weight file's ``embedding``, its ids its vocabulary's
            if vocab_file is None:
                raise ValueError(
                    f"vocab_file: {model.name} takes words and ships no "
                    "vocabulary (pass vocab_file=)")
            use_character_inputs = False
            if embedding_weight_file is None:
                embedding_weight_file = model.weight_file
        if use_character_inputs or embedding_weight_file is not None:
            bilm = loaded(use_character_inputs, embedding_weight_file)
        else:
            if vocab_file is None:
                raise ValueError(
                    f"vocab_file: token input needs a vocabulary, and "
                    f"{model.name} ships none (pass vocab_file=)")
            # the token table of bilm-tf's usage_token.py, made from the
            # model's own char-CNN for this vocabulary
            with tempfile.TemporaryDirectory(prefix="bilm_tokens.") as tmp:
                table = os.path.join(tmp, "token_embeddings.hdf5")
                dump_token_embeddings(os.fspath(vocab_file),
                                      model.options_file, model.weight_file,
                                      table)
                bilm = loaded(False, table)
        bilm.pretrained = model
        bilm.learned_mix = mix_beside(model.directory)
        bilm.alignment = aligned
        bilm.vocab_file = (None if vocab_file is None
                           else os.fspath(vocab_file))
        return bilm

    @classmethod
    def _from_our_run(cls, run: DetectedModel, *, use_character_inputs,
                      stateful, max_batch_size, precision, vocab_file,
                      embedding_weight_file, alignment
                      ) -> "BidirectionalLanguageModel":
        """A save_dir our training wrote, its checkpoint's backbone as
        ``dump-weights`` then the constructor load it: character input,
        float32. The rest is the dump's (``bilm-keras dump-weights``)."""
        asked = [name for name, given in (
            ("use_character_inputs=False", not use_character_inputs),
            (f"precision={precision!r}", precision != DEFAULT_PRECISION),
            ("vocab_file", vocab_file is not None),
            ("embedding_weight_file", embedding_weight_file is not None),
            ("alignment", alignment is not None)) if given]
        if asked:
            raise ValueError(
                f"{run.given}: a training run is read for character input "
                f"at float32, found {', '.join(asked)} (its dump-weights "
                "files take them)")
        options, lm, _, _ = load_save_dir_model(run)
        if options.char_cnn is None:
            raise ValueError(
                f"{run.given}: a word-input training run (its dump-weights "
                "files take a vocabulary)")
        bilm = cls.from_backbone(lm.backbone, stateful=stateful,
                                 max_batch_size=max_batch_size,
                                 options=prediction_options(options))
        bilm.pretrained = None
        bilm.learned_mix = None
        bilm.alignment = None
        return bilm

    @classmethod
    def from_backbone(
        cls, backbone: BiLMBackbone, stateful: bool = False,
        max_batch_size: int = 128, options: Optional[BiLMOptions] = None,
    ) -> "BidirectionalLanguageModel":
        """Wraps a backbone already in memory (trained, or random).

        ``options``, the backbone's, choose the batcher of
        :meth:`embed_sentences`. A converted ELMoForManyLangs model needs
        them for its dictionaries.
        """
        require_eager("BidirectionalLanguageModel.from_backbone")
        self = cls.__new__(cls)
        self.options = options
        self.__init_from_backbone(backbone.build_all(), stateful,
                                  max_batch_size)
        return self

    def __init_from_backbone(self, backbone, stateful, max_batch_size):
        self.backbone = backbone
        self.stateful = stateful
        self.max_batch_size = max_batch_size
        self.use_character_inputs = backbone.use_character_inputs
        if backbone.use_character_inputs:
            spec = tf.TensorSpec((None, None, backbone.ids_width), tf.int32)
        else:
            spec = tf.TensorSpec((None, None), tf.int32)
        self.input_spec = spec
        self._long_token_limit = None  # on first use: it reads word.dic
        self._states = None
        if stateful:
            self._states = {
                direction: [
                    (
                        tf.Variable(tf.zeros((max_batch_size, cell.units)),
                                    trainable=False),
                        tf.Variable(tf.zeros((max_batch_size,
                                              cell.output_dim)),
                                    trainable=False),
                    )
                    for cell in stack.cells
                ]
                for direction, stack in backbone.stacks.items()
            }
        self._bulk_embedder = None
        self._call_fn = graph_function(self._call, input_signature=[spec])

    # ----------------------------------------------------------- the graph
    def _call(self, ids):
        batch = tf.shape(ids)[0]
        initial = None
        if self._states is not None:
            initial = {
                d: [(c[:batch], h[:batch]) for c, h in layers]
                for d, layers in self._states.items()
            }
        out = self.backbone(ids, initial_states=initial)
        if self._states is not None:
            for d, layers in self._states.items():
                for (c_var, h_var), (c, h) in zip(
                    layers, out["final_states"][d]
                ):
                    c_var.assign(tf.concat([c, c_var[batch:]], axis=0))
                    h_var.assign(tf.concat([h, h_var[batch:]], axis=0))
        lm_embeddings, lengths, mask = strip_boundaries(
            lm_layers(out), out["lengths"]
        )
        return {
            "lm_embeddings": lm_embeddings,
            "lengths": lengths,
            "mask": mask,
            "token_embeddings": out["token_embeddings"],
        }

    def __call__(self, ids) -> Dict[str, tf.Tensor]:
        require_eager("BidirectionalLanguageModel call",
                      allow_functions=True)
        ids = tf.convert_to_tensor(ids)
        if not ids.dtype.is_integer:
            raise TypeError(f"ids: expected an integer tensor, found "
                            f"{ids.dtype.name}")
        expected_rank = self.input_spec.shape.rank
        if ids.shape.rank != expected_rank:
            layout = ("(batch, time, max_chars)" if expected_rank == 3
                      else "(batch, time)")
            raise ValueError(
                f"ids: expected rank {expected_rank} {layout}, found shape "
                f"{tuple(ids.shape)}"
            )
        if expected_rank == 3 and ids.shape[2] != self.input_spec.shape[2]:
            what = "characters per token (max_characters_per_token)"
            if self.backbone.token_embedder.has_word_part:
                what = ("ids per token (max_characters_per_token + 1 word "
                        "id)")
            raise ValueError(
                f"ids: expected {self.input_spec.shape[2]} {what}, found "
                f"{ids.shape[2]}"
            )
        if ids.shape[0] == 0:
            raise ValueError("ids: expected at least one sentence, found 0")
        if self.stateful and ids.shape[0] > self.max_batch_size:
            raise ValueError(
                f"ids: batch of {ids.shape[0]} rows exceeds max_batch_size="
                f"{self.max_batch_size} of this stateful model"
            )
        return self._call_fn(tf.cast(ids, tf.int32))

    def make_batcher(self, vocab_file: Optional[str] = None):
        """The batcher whose ids :meth:`__call__` reads.

        It is :func:`~bilm_keras.data.batcher_for_options.batcher_for_options`
        of the options, or :class:`Batcher` or :class:`TokenBatcher` without
        options. For token input ``vocab_file`` defaults to the model's
        :attr:`vocab_file`."""
        return batcher_for_options(
            self.options, self._vocab_for(vocab_file),
            use_character_inputs=self.use_character_inputs,
            max_characters_per_token=self.backbone.max_characters_per_token)

    def reset_states(self) -> None:
        """Zeroes the stateful buffers (no-op when stateless)."""
        for layers in (self._states or {}).values():
            for c, h in layers:
                c.assign(tf.zeros_like(c))
                h.assign(tf.zeros_like(h))

    @property
    def states(self):
        """``{direction: [(c, h), ...]}`` state variables (stateful only)."""
        return self._states

    def _warn_of_long_tokens(self, sentences, vocab_file):
        """``sentences``, with one warning (logged) at the first token far
        longer than a word of the model's (:mod:`bilm_keras.data.
        long_tokens`): unsegmented text."""
        if self._long_token_limit is None and (
                self.use_character_inputs
                or self._vocab_for(vocab_file) is not None):
            self._long_token_limit = limit_for_batcher(
                self.make_batcher(vocab_file))
        return warn_of_long_tokens(sentences, self._long_token_limit,
                                   logging.getLogger(__name__).warning)

    def _vocab_for(self, vocab_file):
        """``vocab_file``, else the model's own for token input (char ids
        do not depend on a vocabulary: none is read for char input)."""
        if vocab_file is None and not self.use_character_inputs:
            return self.vocab_file
        return vocab_file

    # ------------------------------------------------------ bulk embedding
    #: the choices of ``output`` in :meth:`embed_sentences`
    OUTPUTS = BulkEmbedder.OUTPUTS

    @property
    def bulk_embedder(self) -> BulkEmbedder:
        """The :class:`BulkEmbedder` of :meth:`embed_sentences` and
        :meth:`iter_embeddings`, with default settings, made on first use.
        Construct one on :attr:`backbone` for other settings."""
        if self._bulk_embedder is None:
            self._bulk_embedder = BulkEmbedder(self.backbone,
                                               options=self.options,
                                               alignment=self.alignment)
        return self._bulk_embedder

    def _mix_fields(self, output, spec, mix_weights, mix_logits,
                    gamma) -> dict:
        """The mix keywords, the learned mix's where ``output="mix"``
        comes with no mix and no ``spec``."""
        if (output == "mix" and spec is None and self.learned_mix is not None
                and mix_weights is None and mix_logits is None
                and gamma is None):
            return {"mix_weights": None,
                    "mix_logits": self.learned_mix.mix_logits,
                    "gamma": self.learned_mix.gamma}
        return {"mix_weights": mix_weights, "mix_logits": mix_logits,
                "gamma": gamma}

    # More than eight parameters on purpose: bilm-tf's positional
    # arguments, then the spec's fields as keywords (the facade users'
    # way), which become one EmbeddingSpec in embedding_spec only.
    def embed_sentences(
        self,
        sentences: Iterable[Sequence[str]],
        batch_size: int | None = None,
        vocab_file: Optional[str] = None,
        *,
        output: Optional[str] = None,
        layers: Optional[Sequence[int]] = None,
        mix_weights: Optional[Sequence[float]] = None,
        mix_logits: Optional[Sequence[float]] = None,
        gamma: Optional[float] = None,
        on_batch: Optional[Callable[[int, int], None]] = None,
        spec: Optional[EmbeddingSpec] = None,
    ) -> List[np.ndarray]:
        """Embeds many tokenized sentences, statelessly, in input order:
        :meth:`BulkEmbedder.embed_sentences` (arguments and results there).

        Exact (to float32 round-off) to calling the model on each sentence
        alone, stateless, and faster: distinct tokens are embedded once
        and sentences are sorted by length. A stateful model is not
        touched: its states stay as they were.

        ``output``, ``layers``, ``mix_weights``, ``mix_logits`` and
        ``gamma`` are the fields of an
        :class:`~bilm_keras.embedding.outputs.EmbeddingSpec`, documented
        there with their defaults. They are given here as keywords, such
        as ``output="average"``, and None here is the spec's default. Or
        pass one ``spec`` and none of them, see :func:`embedding_spec`.

        The first call fixes glibc's mmap threshold for the process, so
        that freed memory goes back to the system, see :mod:`bilm_keras.
        embedding.memory`. It does not when ``MALLOC_MMAP_THRESHOLD_`` is
        set or after
        :func:`~bilm_keras.embedding.memory.keep_glibc_defaults`.
        """
        return_freed_memory_for_bulk_embedding()  # the process's malloc
        sentences = self._warn_of_long_tokens(sentences, vocab_file)
        return self.bulk_embedder.embed_sentences(
            sentences, batch_size, self._vocab_for(vocab_file),
            spec=embedding_spec(spec, output=output, layers=layers,
                                **self._mix_fields(output, spec, mix_weights,
                                                   mix_logits, gamma)),
            on_batch=on_batch)

    # The keywords of embed_sentences, and chunk_size: the facade's
    # convenience keywords, turned into an EmbeddingSpec in one place
    # (embedding_spec), so the many parameters are the user's, not the
    # plumbing.
    def iter_embeddings(
        self,
        sentences: Iterable[Sequence[str]],
        batch_size: int | None = None,
        vocab_file: Optional[str] = None,
        *,
        output: Optional[str] = None,
        layers: Optional[Sequence[int]] = None,
        mix_weights: Optional[Sequence[float]] = None,
        mix_logits: Optional[Sequence[float]] = None,
        gamma: Optional[float] = None,
        chunk_size: int = CHUNK_SIZE,
        on_batch: Optional[Callable[[int, int], None]] = None,
        spec: Optional[EmbeddingSpec] = None,
    ) -> Iterator[np.ndarray]:
        """:meth:`embed_sentences`, streaming ``chunk_size`` sentences at a
        time: :meth:`BulkEmbedder.iter_embeddings`, arguments there. The
        spec's fields as keywords and the process's malloc setting are as
        in :meth:`embed_sentences`."""
        return_freed_memory_for_bulk_embedding()  # the process's malloc
        sentences = self._warn_of_long_tokens(sentences, vocab_file)
        return self.bulk_embedder.iter_embeddings(
            sentences, batch_size, self._vocab_for(vocab_file),
            spec=embedding_spec(spec, output=output, layers=layers,
                                **self._mix_fields(output, spec, mix_weights,
                                                   mix_logits, gamma)),
            chunk_size=chunk_size, on_batch=on_batch)


def _our_run(spec) -> Optional[DetectedModel]:
    """The save_dir of ours ``spec`` names, detected once, else None (a
    model of another family: :func:`~bilm_keras.pretrained.resolve_model`
    finds it). A folder of checkpoints detection cannot read raises its
    error, which names the file and what is wrong."""
    path = os.fspath(spec)
    if not (os.path.isdir(path) and list_checkpoints(path)):
        return None
    run = detect_model(path)
    return run if run.family == OUR_RUN else None


def embedding_spec(spec: Optional[EmbeddingSpec] = None,
                   **fields) -> EmbeddingSpec:
    """The one place the facade's convenience keywords become an
    :class:`~bilm_keras.embedding.outputs.EmbeddingSpec`: ``spec`` as it
    is, or one built from ``fields``, its fields as keywords, where None
    is the field's default. A field given (not None, not its default) with a
    ``spec`` is an error: the two would disagree.

    Raises:
        SettingError: a field out of range (named), or ``spec`` and a
            field both given.
        TypeError: ``spec`` is not an EmbeddingSpec.
    """
    if spec is None:
        return EmbeddingSpec(**{name: value for name, value in fields.items()
                                if value is not None})
    if not isinstance(spec, EmbeddingSpec):
        raise TypeError(f"spec: expected an EmbeddingSpec, found "
                        f"{type(spec).__name__}")
    defaults = EmbeddingSpec()
    given = [name for name, value in fields.items()
             if value is not None and value != getattr(defaults, name)]
    if given:
        raise SettingError("spec", f"expected the settings either as "
                                   f"spec or as keyword arguments, "
                                   f"found spec and {given[0]}")
    return spec

