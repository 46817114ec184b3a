"""Embedding in an Apache Beam pipeline: Beam's ``RunInference`` with our
:class:`BiLMModelHandler`, and :class:`EmbedSentences`, the transform of a
PCollection of ``(key, tokens)`` into ``(key, array)``.

::

    import apache_beam as beam
    from bilm_keras.embedding.beam_inference import EmbedSentences

    with beam.Pipeline() as p:
        vectors = (p
                   | beam.Create([(0, ["The", "cat", "sat", "."]),
                                  (1, ["深度", "学习"])])
                   | EmbedSentences(options_file="options.json",
                                    weight_file="lm_weights.hdf5",
                                    spec=EmbeddingSpec(output="top")))
        # (0, (4, 1024) float32), (1, (2, 1024) float32)

Each worker process loads the model once, and its threads share it
through Beam's ``shared.Shared``. It embeds whole Beam batches of
sentences with a :class:`~bilm_keras.embedding.bulk_embedder.BulkEmbedder`,
which sorts each batch by length into its own compute batches. A Beam
batch is a chunk of ``bilm-keras embed``, 4,096 sentences by default.

The model may be files, ``options.json`` and weights on any Beam file
system. A worker copies a remote file to its disk once. It may also be a
published model's name, URL or archive, resolved on each worker through
:func:`~bilm_keras.pretrained.resolve_model` into its cache,
``$BILM_KERAS_CACHE``.

The whole-file job, ``bilm-keras embed --runner``, is
:mod:`bilm_keras.embedding.beam_dump`. It needs ``apache-beam``, the
``beam`` extra. TensorFlow is imported on the workers, when the model is
loaded.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Optional

import apache_beam as beam
from apache_beam.ml.inference.base import ModelHandler, RunInference

from bilm_keras._utils.fast_precision import DEFAULT_PRECISION
from bilm_keras._utils.settings import SettingError, check_int
from bilm_keras.embedding import beam_files
from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.layers.precision import dtype_policy
from bilm_keras.options import BiLMOptions
from bilm_keras.pretrained.resolution import ResolvedModel, resolve_model

#: sentences per Beam batch by default: ``bilm-keras embed``'s chunk, so
#: the embedder's length sorting has as many sentences to group
DEFAULT_BATCH_SENTENCES = 4096


@dataclasses.dataclass(frozen=True)
class ModelFiles:
    """The files of a model, as a worker reads them (local paths or URLs on
    a Beam file system).

    Attributes:
        options_file: the options JSON.
        weight_file: the weights HDF5 (bilm-tf's layout).
        vocab_file: the vocabulary. Token input needs it, characters do
            not.
        embedding_weight_file: a token-input run's token table, from
            ``bilm-keras dump-tokens``. None means character input, or the
            table in ``weight_file`` for a token-trained model, whose
            options have no ``char_cnn``.
    """

    options_file: str
    weight_file: str
    vocab_file: Optional[str] = None
    embedding_weight_file: Optional[str] = None


class LoadedBiLM:
    """What :meth:`BiLMModelHandler.load_model` gives each worker process:
    a :class:`~bilm_keras.embedding.bulk_embedder.BulkEmbedder` over the
    loaded backbone, and what it embeds. Its threads share it. A lock lets
    one batch at a time through, and TensorFlow's own threads use the
    cores.

    Attributes:
        embedder: the embedder.
        spec: what each sentence's array holds.
        vocab_file: a local copy of the vocabulary, or None.
        batch_size: sentences per LSTM batch, or None for the embedder's
            compute batches.
        model: where the files came from (the resolved model, or None).
    """

    def __init__(self, embedder, spec: EmbeddingSpec,
                 vocab_file: Optional[str], batch_size: Optional[int],
                 model: Optional[ResolvedModel] = None):
        self.embedder = embedder
        self.spec = spec
        self.vocab_file = vocab_file
        self.batch_size = batch_size
        self.model = model
        self._lock = threading.Lock()

    def embed(self, sentences: Sequence[Sequence[str]]) -> list:
        """One array per sentence, in order
        (:meth:`~bilm_keras.embedding.bulk_embedder.BulkEmbedder.
        embed_sentences` with this model's spec)."""
        with self._lock:
            return self.embedder.embed_sentences(
                sentences, batch_size=self.batch_size,
                vocab_file=self.vocab_file, spec=self.spec)


class BiLMModelHandler(ModelHandler):
    """Beam's ``ModelHandler`` for a biLM.

    ``RunInference`` over ``(key, tokens)`` elements gives ``(key, array)``
    elements. The array is what
    :meth:`~bilm_keras.BidirectionalLanguageModel.embed_sentences` returns
    for ``spec``. All layers give `(K, n, D)`, the top one, a mix or an
    average give `(n, D)`, and a sentence vector is `(D,)`. Here ``n`` is
    ``len(tokens)`` and ``D`` is ``2 * projection_dim``.

    The model is loaded once per worker process and shared by its threads.
    ``RunInference`` keeps it in Beam's ``shared.Shared``. With
    ``large_model``, one copy per machine serves every process through
    ``share_model_across_processes``. That suits a model that does not fit
    once per process, and the arrays then travel between processes.

    Beam's ``BatchElements`` batches the elements ``batch_sentences`` at a
    time, fewer at a bundle's end. Each batch is sorted by length into the
    embedder's compute batches, as a chunk of ``bilm-keras embed`` is.

    Args:
        model: a published model. A registry name such as
            ``"elmo-original"``, an http(s) URL or a local archive or
            folder is resolved on each worker by
            :func:`~bilm_keras.pretrained.resolve_model` into
            ``cache_dir``. The files of a :class:`~bilm_keras.pretrained.
            ResolvedModel` are used as they are. Not with ``options_file``.
        options_file, weight_file: the model's files instead. Local paths
            or any Beam file system's, e.g. ``gs://bucket/options.json``,
            copied to the worker's disk once.
        vocab_file: the vocabulary. Token input needs it. The default is a
            resolved model's own, if it ships one.
        embedding_weight_file: the token table of ``vocab_file`` for token
            input, from ``bilm-keras dump-tokens``.
        spec: what to embed, an :class:`~bilm_keras.embedding.outputs.
            EmbeddingSpec`. The default is every layer in float32.
        batch_size: sentences per LSTM batch. None, the default, uses the
            embedder's own length-sorted compute batches.
        devices: the devices each worker embeds on. The default is every
            GPU, else the CPU.
        batch_sentences: int. Sentences per Beam batch, the
            ``min_batch_size`` and ``max_batch_size`` of ``BatchElements``.
            The embedder sorts each batch by length, so larger batches pad
            less, and memory holds a batch's arrays.
        large_model: one model per machine, not per process, as above.
        cache_dir: the model cache of ``model`` on the workers. The
            default is ``$BILM_KERAS_CACHE``, else ``~/.cache/bilm_keras``.
        precision: what the workers' products compute in, see
            :mod:`~bilm_keras.layers.precision`. ``"float32"`` is exact and
            the default. ``"bfloat16"`` needs an AMX CPU or a GPU of
            compute capability 8.0 and up, and a worker without one logs a
            warning.

    Raises:
        SettingError: no model or two, a spec that is not an
            ``EmbeddingSpec``, or a bad ``batch_size`` or
            ``batch_sentences``. They are checked here, on the machine that
            builds the pipeline.

    Example:
        >>> handler = BiLMModelHandler(options_file="options.json",
        ...                            weight_file="lm_weights.hdf5",
        ...                            spec=EmbeddingSpec(output="average"))
        >>> keyed = pcoll | RunInference(handler)  # (key, (n, D) float32)
    """

    # Many keywords, by design: Beam pickles the handler to every worker,
    # so it holds plain values (the model's files and the embed flags),
    # named as `embed`'s, and builds the model on the worker.
    def __init__(
        self,
        model: str | os.PathLike | ResolvedModel | None = None,
        *,
        options_file: str | os.PathLike | None = None,
        weight_file: str | os.PathLike | None = None,
        vocab_file: str | os.PathLike | None = None,
        embedding_weight_file: str | os.PathLike | None = None,
        spec: EmbeddingSpec | None = None,
        batch_size: int | None = None,
        devices: Sequence[str] | None = None,
        batch_sentences: int = DEFAULT_BATCH_SENTENCES,
        large_model: bool = False,
        cache_dir: str | os.PathLike | None = None,
        precision: str = DEFAULT_PRECISION,
    ):
        if (model is None) == (options_file is None):
            raise SettingError(
                "model", "expected either model (a name, URL, archive or "
                         "folder) or options_file and weight_file, found "
                         f"{'both' if model is not None else 'neither'}")
        if options_file is not None and weight_file is None:
            raise SettingError("weight_file", "expected the weights of "
                                              "options_file, found None")
        spec = EmbeddingSpec() if spec is None else spec
        if not isinstance(spec, EmbeddingSpec):
            raise SettingError("spec", f"expected an EmbeddingSpec, found "
                                       f"{type(spec).__name__}")
        check_int("batch_size", batch_size, 1, optional=True)
        dtype_policy(precision)  # SettingError naming the precisions
        check_int("batch_sentences", batch_sentences, 1)
        super().__init__(min_batch_size=batch_sentences,
                         max_batch_size=batch_sentences,
                         large_model=large_model)
        # a ResolvedModel is used as it is, a spec resolved on the worker
        self.resolved = model if isinstance(model, ResolvedModel) else None
        self.model = (model if model is None or self.resolved is not None
                      else os.fspath(model))
        self.files = None if options_file is None else ModelFiles(
            _path(options_file), _path(weight_file), _path(vocab_file),
            _path(embedding_weight_file))
        self.vocab_file = _path(vocab_file)
        self.spec = spec
        self.batch_size = batch_size
        self.devices = None if devices is None else list(devices)
        self.batch_sentences = batch_sentences
        self.cache_dir = None if cache_dir is None else os.fspath(cache_dir)
        self.precision = precision

    def model_files(self) -> tuple[ModelFiles, Optional[ResolvedModel]]:
        """The files to load and the resolved model. A ``model`` given as a
        spec is resolved here, a download into the cache the first time."""
        if self.files is not None:
            return self.files, None
        resolved = self.resolved or resolve_model(
            self.model, cache_dir=self.cache_dir, progress=False)
        vocab = self.vocab_file or resolved.vocab_file
        return ModelFiles(resolved.options_file, resolved.weight_file,
                          vocab, None), resolved

    def load_model(self) -> LoadedBiLM:
        """Loads the model on a worker, once per process. Beam shares it
        between the process's threads."""
        from bilm_keras.embedding.bulk_embedder import BulkEmbedder
        from bilm_keras.models.backbone_loading import load_backbone

        files, resolved = self.model_files()
        scratch = beam_files.scratch_folder()
        local = {name: None if path is None
                 else beam_files.local_copy(path, scratch)
                 for name, path in dataclasses.asdict(files).items()}
        options = BiLMOptions.from_json(local["options_file"])
        table = local["embedding_weight_file"]
        if table is None and options.char_cnn is None:
            table = local["weight_file"]  # a token-trained model's table
        if table is not None and local["vocab_file"] is None:
            raise SettingError("vocab_file", "token input needs the "
                                             "vocabulary of its token "
                                             "table, found None")
        self.spec.resolve(options.lstm.n_layers)  # its layers, its mix
        backbone = load_backbone(
            options, local["weight_file"],
            use_character_inputs=table is None, embedding_weight_file=table,
            precision=self.precision)
        embedder = BulkEmbedder(backbone, devices=self.devices,
                                options=options)
        return LoadedBiLM(embedder, self.spec, local["vocab_file"],
                          self.batch_size, resolved)

    def run_inference(self, batch: Sequence[tuple[Any, Sequence[str]]],
                      model: LoadedBiLM,
                      inference_args: Optional[dict] = None
                      ) -> Iterable[tuple[Any, Any]]:
        """``(key, tokens)`` -> ``(key, array)``, one batch, in order."""
        keys = [key for key, _ in batch]
        arrays = model.embed([tokens for _, tokens in batch])
        return list(zip(keys, arrays))

    def get_num_bytes(self, batch) -> int:
        """The batch's text in UTF-8 bytes, for Beam's metrics. It is
        cheaper than Beam's default, a pickle of the batch."""
        return sum(len(token.encode("utf-8")) for _, tokens in batch
                   for token in tokens)

    def get_metrics_namespace(self) -> str:
        return "bilm_keras"

    def validate_inference_args(self, inference_args) -> None:
        if inference_args:
            raise ValueError(f"inference_args: BiLMModelHandler takes none "
                             f"(the spec says what to embed), found "
                             f"{sorted(inference_args)}")

    def __repr__(self) -> str:
        model = self.model if self.files is None else self.files
        return f"BiLMModelHandler({model!r}, spec={self.spec!r})"


class EmbedSentences(beam.PTransform):
    """``(key, tokens)`` -> ``(key, array)``: ``RunInference`` with a
    :class:`BiLMModelHandler`.

    The arguments are the handler's, or give one as ``handler``. Keys are
    any values and pass through unchanged. ``tokens`` is a list of
    strings, and a sentence may be empty.

    Example:
        >>> pcoll | EmbedSentences("elmo-original",
        ...                        spec=EmbeddingSpec(output="mix",
        ...                                           mix_weights=(.2, .5, .3)))
    """

    def __init__(self, model=None, *, handler: BiLMModelHandler | None = None,
                 **handler_arguments):
        super().__init__()
        if handler is not None and (model is not None or handler_arguments):
            raise SettingError("handler", "expected a handler or its "
                                          "arguments, found both")
        self.handler = (handler if handler is not None
                        else BiLMModelHandler(model, **handler_arguments))

    def expand(self, pcoll):
        return pcoll | "EmbedWithBiLM" >> RunInference(self.handler)


def _path(path) -> Optional[str]:
    return None if path is None else os.fspath(path)
