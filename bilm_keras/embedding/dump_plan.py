"""How a whole-file dump runs, and what it checks before it loads a model.

:class:`DumpSettings` holds how it runs, as one value. The dump, either
:func:`~bilm_keras.dump_bilm_embeddings` or ``bilm-keras embed``, checks
the options, the :class:`~bilm_keras.embedding.outputs.EmbeddingSpec`
against them, the token-input files, the keys and the shard, and the input
file. One function serves the library and the command, so that each rule
is written once. It needs no TensorFlow, so the command runs it before
importing TensorFlow.

:func:`dump_record` is what the output file records of how it was made:
its attributes and the run's identity. The dump in one process and the
Beam pipeline of :mod:`bilm_keras.embedding.beam_dump` share it, and their
files are the same.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from bilm_keras._utils.fast_precision import DEFAULT_PRECISION, PRECISIONS
from bilm_keras._utils.settings import SettingError, check_int, is_int
from bilm_keras._utils.version import __version__
from bilm_keras.data.sentence_file import check_sentence_file
from bilm_keras.embedding.outputs import (
    EMBEDDING_OUTPUTS,
    EmbeddingSpec,
    ResolvedEmbedding,
)
from bilm_keras.embedding.runs import (
    RunEvent, file_fingerprint, run_identity)
from bilm_keras.embedding.shards import CHUNK_SIZE, shard_lines
from bilm_keras.options import BiLMOptions


@dataclasses.dataclass(frozen=True)
class DumpSettings:
    """How a whole-file dump runs, as one value.

    What it embeds is an
    :class:`~bilm_keras.embedding.outputs.EmbeddingSpec`.
    :func:`~bilm_keras.dump_bilm_embeddings`, the Beam pipeline and
    ``bilm-keras embed``, which builds it from its flags, take it. Each
    field is documented here alone. It is checked when built: a bad field
    raises :class:`~bilm_keras._utils.settings.SettingError` naming it.

    Fields:
        batch_size: int >= 1 or None: sentences per LSTM batch. None
            (default): the embedder's own compute batches, see
            :meth:`~bilm_keras.BulkEmbedder.embed_sentences`.
        chunk_size: int >= 1, lines read, sorted and embedded together,
            default 4096. It also sets which lines a shard embeds.
        embedding_weight_file: str or None: run from token ids with this
            token table, from :func:`~bilm_keras.dump_token_embeddings` of
            ``vocab_file`` as in bilm-tf's ``usage_token.py``. It gives the
            same vectors without the char-CNN, and ``vocab_file`` is then
            required. None: character input, or the table in
            ``weight_file`` for a token-input model, one whose options
            have no ``char_cnn``.
        use_sentence_keys: bool: name datasets by their line's text
            instead of its number, as AllenNLP's ``--use-sentence-keys``.
            Every line must then be a possible, distinct name, checked
            before anything is embedded: no blank line, no two lines
            alike, no ``/``, no NUL, not ``.``. Not with ``shard``.
        shard: ``(K, N)`` or None: embed only shard ``K`` of ``N``. Of
            the ``c = ceil(n / chunk_size)`` chunks of the single run, it
            embeds chunks ``[K * c // N, (K + 1) * c // N)``, see
            :func:`~bilm_keras.embedding.shards.shard_lines`. Datasets
            keep their line numbers. :func:`~bilm_keras.embedding.merge.
            merge_embedding_files` joins the shards, bit for bit the
            single run's file.
        resume: bool: continue a killed run of the same inputs and
            settings from its last whole part. The run's progress is kept
            in ``outfile + ".partial/"`` until the output is complete, see
            :mod:`bilm_keras.embedding.runs`.
        devices: tuple of str or None: the devices to embed on, e.g.
            ``("GPU:0", "GPU:1")``. None: every GPU, else the CPU.
        progress: bool: a progress bar on stderr with sentences, tokens/s
            and ETA, updated after every batch. Default True.
        precision: str: what the biLM's products compute in, see
            :mod:`~bilm_keras.layers.precision`. ``"float32"`` is the
            default, exact. ``"bfloat16"`` / ``"float16"`` are faster on
            AMX CPUs / recent GPUs, see ``docs/performance.md``. It is
            part of a run's identity, and a resumed run keeps its
            precision.
        alignment: tuple of str: cross-lingual alignment matrices applied
            to the output layers before they are reduced, one file for
            every layer or one per output layer. ``torch.save`` wrote
            them, see :mod:`~bilm_keras.weights.alignment`. Empty, the
            default: none. Their contents are part of a run's identity.
        on_event: callable or None: the run's progress callback, called
            with each :class:`~bilm_keras.embedding.runs.RunEvent`, e.g.
            to log, count or stop the run. Events come at each line
            written, each dataset merged, before the rename and before the
            clean-up. It is not part of the run's identity, nor of
            equality.
    """

    batch_size: Optional[int] = None
    chunk_size: int = CHUNK_SIZE
    embedding_weight_file: Optional[str] = None
    use_sentence_keys: bool = False
    shard: Optional[Tuple[int, int]] = None
    resume: bool = False
    devices: Optional[Tuple[str, ...]] = None
    progress: bool = True
    precision: str = DEFAULT_PRECISION
    alignment: Tuple[str, ...] = ()
    on_event: Optional[Callable[[RunEvent], None]] = dataclasses.field(
        default=None, compare=False)

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise SettingError("precision", f"expected one of "
                                            f"{', '.join(PRECISIONS)}, "
                                            f"found {self.precision!r}")
        if self.on_event is not None and not callable(self.on_event):
            raise SettingError("on_event", f"expected a callable or None, "
                                           f"found {self.on_event!r}")
        check_int("batch_size", self.batch_size, 1, optional=True)
        check_int("chunk_size", self.chunk_size, 1)
        if self.embedding_weight_file is not None:
            object.__setattr__(self, "embedding_weight_file",
                               os.fspath(self.embedding_weight_file))
        if isinstance(self.alignment, (str, bytes, os.PathLike)) or not (
                isinstance(self.alignment, Sequence)):
            raise SettingError("alignment", f"expected a list of files, "
                                            f"found {self.alignment!r}")
        object.__setattr__(self, "alignment",
                           tuple(os.fspath(p) for p in self.alignment))
        for name in ("use_sentence_keys", "resume", "progress"):
            if not isinstance(getattr(self, name), bool):
                raise SettingError(name, f"expected True or False, found "
                                         f"{getattr(self, name)!r}")
        if self.shard is not None:
            shard = self.shard
            if (isinstance(shard, (str, bytes))
                    or not isinstance(shard, Sequence) or len(shard) != 2
                    or not all(is_int(k) for k in shard)
                    or not 0 <= shard[0] < shard[1]):
                raise SettingError("shard", f"expected (K, N) with 0 <= K "
                                            f"< N, found {shard!r}")
            object.__setattr__(self, "shard", (int(shard[0]),
                                               int(shard[1])))
        if self.use_sentence_keys and self.shard is not None:
            raise SettingError("use_sentence_keys",
                               "not with shard (a shard's datasets keep "
                               "their line numbers for the merge)")
        if self.devices is not None:
            devices = ([self.devices] if isinstance(self.devices, str)
                       else self.devices)
            if not isinstance(devices, Sequence) or not all(
                    isinstance(d, str) for d in devices):
                raise SettingError("devices", f"expected a list of device "
                                              f"names, found "
                                              f"{self.devices!r}")
            object.__setattr__(self, "devices", tuple(devices))

    @property
    def keys(self) -> str:
        """How datasets are named: ``"line_number"`` or ``"sentence"``."""
        return "sentence" if self.use_sentence_keys else "line_number"

    def replace(self, **changes) -> "DumpSettings":
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class DumpPlan:
    """A dump's inputs, checked by :func:`plan_dump`.

    Attributes:
        options: the model's options.
        embedding: the spec, resolved for the model's layers.
        embedding_weight_file: the token table of a token-input run, the
            one given or ``weight_file`` for a model without ``char_cnn``.
            None for character input.
        keys: how datasets are named: ``"line_number"`` or ``"sentence"``.
        n_lines: lines of the input file, i.e. sentences, blank ones
            included.
        lines: ``(first, end)``: the lines this run embeds. They are all
            lines, or its shard's whole chunks of the single run, see
            :func:`~bilm_keras.embedding.shards.shard_lines`.
    """

    options: BiLMOptions
    embedding: ResolvedEmbedding
    embedding_weight_file: Optional[str]
    keys: str
    n_lines: int
    lines: Tuple[int, int]


def plan_dump(
    *,
    options_file: str | os.PathLike,
    weight_file: str | os.PathLike,
    vocab_file: Optional[str | os.PathLike],
    dataset_file: str | os.PathLike,
    spec: EmbeddingSpec,
    settings: DumpSettings,
    checked_lines: Optional[int] = None,
) -> DumpPlan:
    """Checks everything of a dump that needs no model.

    The arguments are as :func:`~bilm_keras.dump_bilm_embeddings`'s. A bad
    input fails in seconds, before hours of work.

    ``checked_lines``: the caller read and checked the input, which has
    this many lines, e.g. the Beam pipeline's glob in
    :func:`~bilm_keras.embedding.beam_dump.plan_beam_dump`. None:
    ``dataset_file`` is read here.

    Raises:
        OptionsError: ``options_file`` does not describe a biLM.
        SettingError: the spec's layers or mix do not fit the model, or
            token input has no ``vocab_file``. Token input is an
            ``embedding_weight_file`` or a model without ``char_cnn``.
        SentenceFileError: ``dataset_file`` is missing or not UTF-8, or,
            with keys by sentence, has lines that cannot name a dataset.
    """
    if not isinstance(settings, DumpSettings):
        raise TypeError(f"settings: expected a DumpSettings, found "
                        f"{type(settings).__name__}")
    embedding_weight_file = settings.embedding_weight_file
    options = BiLMOptions.from_json(options_file)
    embedding = spec.resolve(options.lstm.n_layers)
    if embedding_weight_file is None and options.char_cnn is None:
        table = os.fspath(weight_file)  # a token-input model's own table
        given = "a model without char_cnn reads its token table from "
        given += "weight_file"
    else:
        table = (None if embedding_weight_file is None
                 else os.fspath(embedding_weight_file))
        given = "embedding_weight_file"
    if table is not None and vocab_file is None:
        raise SettingError("vocab_file", f"token input ({given}) needs the "
                                         f"vocabulary of its token table, "
                                         f"found None")
    n_lines = checked_lines
    if n_lines is None:
        n_lines = check_sentence_file(
            dataset_file, sentence_keys=settings.use_sentence_keys).n_lines
    if settings.shard is None:
        lines = (0, n_lines)
    else:
        lines = shard_lines(*settings.shard, n_lines, settings.chunk_size)
    return DumpPlan(options=options, embedding=embedding,
                    embedding_weight_file=table, keys=settings.keys,
                    n_lines=n_lines, lines=lines)


@dataclasses.dataclass(frozen=True)
class DumpRecord:
    """What a dump's output file records of how it was made
    (:func:`dump_record`).

    Attributes:
        identity: the run's identity (:func:`~bilm_keras.embedding.runs.
            run_identity`: the files' contents, the output choices, the
            batching, the number of lines).
        attrs: the output file's attributes, but for ``n_sentences``,
            ``run`` and ``run_id`` (added when the file is written).
    """

    identity: dict
    attrs: dict


def _alignment_identity(settings: DumpSettings, fingerprint) -> dict:
    """The alignment files' fingerprints (none without an alignment, so
    that other runs keep their identity)."""
    identity = {}
    for k, path in enumerate(settings.alignment):
        identity.update((fingerprint or file_fingerprint)(
            f"alignment_{k}", path))
    return identity


def dump_record(
    plan: DumpPlan,
    spec: EmbeddingSpec,
    settings: DumpSettings,
    *,
    options_file: str | os.PathLike,
    weight_file: str | os.PathLike,
    vocab_file: Optional[str | os.PathLike],
    dataset_file: Optional[str | os.PathLike],
    fingerprint: Optional[Callable[[str, Optional[str]], dict]] = None,
) -> DumpRecord:
    """The identity and the attributes of the dump ``plan`` describes.

    The arguments are as :func:`~bilm_keras.dump_bilm_embeddings`'s, and
    the attributes are listed there.

    Args:
        fingerprint: how each file's contents are fingerprinted for the
            identity. None: :func:`~bilm_keras.embedding.runs.
            file_fingerprint`, for local files. The Beam pipeline's reads any
            Beam file system and a glob of input files.
    """
    embedding = plan.embedding
    table = plan.embedding_weight_file
    mix = embedding.mix
    mix_settings = {} if mix is None else dict(
        mix_weights=[float(w) for w in mix.weights], gamma=float(mix.gamma),
        mix_form=mix.form)
    identity = run_identity(
        options_file=options_file, weight_file=weight_file,
        vocab_file=vocab_file, dataset_file=dataset_file,
        output=spec.output, layers=embedding.layer_ids, dtype=spec.dtype,
        batch_size=settings.batch_size, chunk_size=settings.chunk_size,
        n_lines=plan.n_lines, precision=settings.precision,
        embedding_weight_file=table, keys=plan.keys,
        **({} if fingerprint is None else {"fingerprint": fingerprint}),
        **mix_settings, **_alignment_identity(settings, fingerprint))
    attrs = dict(
        options_file=_absolute(options_file),
        weight_file=_absolute(weight_file),
        vocab_file=_absolute(vocab_file) if vocab_file else "",
        dataset_file=_absolute(dataset_file),
        output=spec.output,
        layers=np.asarray(embedding.layer_ids, np.int64),
        dtype=spec.dtype,
        layout=EMBEDDING_OUTPUTS[spec.output],
        keys=plan.keys,
        embedding_weight_file=_absolute(table) if table else "",
        bilm_keras_version=__version__,
        precision=settings.precision,
    )
    if mix is not None:
        attrs.update(mix_weights=mix.weights, gamma=mix.gamma,
                     mix_form=mix.form)
        if mix.logits is not None:
            attrs["mix_logits"] = mix.logits
    if settings.alignment:  # the matrices the layers were mapped by
        attrs["alignment"] = [_absolute(path) for path in settings.alignment]
    return DumpRecord(identity=identity, attrs=attrs)


def _absolute(path) -> str:
    """A local path made absolute, a URL such as ``gs://...`` as it is."""
    path = os.fspath(path)
    return path if "://" in path else os.path.abspath(path)
