"""Embeddings to HDF5 files.

Two dumps live here. One is the token table of a biLM, bilm-tf's
``dump_token_embeddings``. The other is whole-dataset biLM embeddings,
``dump_bilm_embeddings``, written through a durable run
(:mod:`bilm_keras.embedding.runs`). Weights are written by
:mod:`bilm_keras.weights`.

Both load the backbone from its files
(:func:`~bilm_keras.models.backbone_loading.load_backbone`) and embed with
a :class:`~bilm_keras.embedding.bulk_embedder.BulkEmbedder`. Neither needs
the inference facade."""

from __future__ import annotations

import collections
import itertools
import os
from typing import Optional

import numpy as np
import tensorflow as tf

from bilm_keras._utils.atomic_files import atomic_hdf5
from bilm_keras._utils.graph_function import graph_function
from bilm_keras.data.manylangs_vocabulary import ManyLangsCharsVocabulary
from bilm_keras.data.sentence_file import read_sentence_lines
from bilm_keras.data.vocabulary import UnicodeCharsVocabulary
from bilm_keras.embedding.bulk_embedder import BulkEmbedder
from bilm_keras.embedding.dump_plan import (
    DumpSettings,
    dump_record,
    plan_dump,
)
from bilm_keras.embedding.memory import return_freed_memory_for_bulk_embedding
from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.embedding.progress import ProgressBar
from bilm_keras.embedding.runs import file_locations, run_durably
from bilm_keras.models.backbone_loading import load_backbone
from bilm_keras.options import BiLMOptions
from bilm_keras.weights.alignment import read_alignment


def dump_token_embeddings(
    vocab_file: str,
    options_file: str,
    weight_file: str,
    outfile: str,
    *,
    batch_size: int = 1024,
) -> None:
    """Writes the char-CNN embedding of every vocabulary token.

    The result (dataset ``embedding``, `(n_tokens_vocab, projection_dim)`)
    is the ``embedding_weight_file`` of a token-input
    :class:`BidirectionalLanguageModel`. Tokens are embedded
    ``batch_size`` at a time (bilm-tf ran one session call per token).
    ``vocab_file`` needs no ``<UNK>`` (bilm-tf's ``usage_token.py`` writes
    ``<S>``, ``</S>`` and the dataset's tokens): row ``i`` embeds line ``i``.
    A converted ELMoForManyLangs model spells each token with its own
    dictionaries (``<S>``/``</S>`` as its ``<bos>``/``<eos>``).
    """
    options = BiLMOptions.from_json(options_file)
    backbone = load_backbone(options, weight_file)
    manylangs = options.manylangs
    if manylangs is None:
        vocab = UnicodeCharsVocabulary(
            vocab_file, backbone.max_characters_per_token
        )
    else:
        vocab = ManyLangsCharsVocabulary.from_files(
            vocab_file, manylangs.char_dic,
            manylangs.word_dic if manylangs.has_word_part else None,
            backbone.max_characters_per_token,
        )
    char_ids = vocab.word_char_ids + 1  # (V, W), +1: 0 is the mask

    @graph_function(input_signature=[
        tf.TensorSpec((None, backbone.ids_width), tf.int32)
    ])
    def embed(ids):
        return backbone.embed_tokens(ids[:, None, :])[:, 0, :]  # (N, P)

    pieces = [
        embed(tf.constant(char_ids[i: i + batch_size], tf.int32)).numpy()
        for i in range(0, len(char_ids), batch_size)
    ]
    embeddings = (
        np.concatenate(pieces)
        if pieces else np.zeros((0, backbone.projection_dim), np.float32)
    )
    with atomic_hdf5(outfile) as fout:
        fout.create_dataset("embedding", data=embeddings.astype(np.float32))


# Long for its docstring (the output file's layout and attributes,
# documented here once); the body is its checks, a line reader and the
# durable run.
def dump_bilm_embeddings(
    vocab_file: Optional[str],
    dataset_file: str,
    options_file: str,
    weight_file: str,
    outfile: str,
    spec: EmbeddingSpec = EmbeddingSpec(),
    settings: DumpSettings = DumpSettings(),
) -> int:
    """Writes the biLM embedding of every sentence of a file to HDF5.

    It takes bilm-tf's five arguments, then ``spec`` and ``settings``.
    ``spec``, an :class:`~bilm_keras.embedding.outputs.EmbeddingSpec`, says
    what to embed, by default every layer in float32. ``settings``, a
    :class:`~bilm_keras.embedding.dump_plan.DumpSettings`, says how the run
    goes: batching, token input, keys, shard, resume, devices, progress
    bar and callback. Each of their fields is documented there.

    The layout is AllenNLP's ``elmo`` command's. There is one dataset per
    line of ``dataset_file``, named by its 0-based line number. The file is
    UTF-8, one whitespace-tokenized sentence per line. A dataset
    ``sentence_to_index`` holds one JSON string mapping each line's
    stripped text to its dataset's name, for a repeated line its last.
    With ``use_sentence_keys``, datasets are named by their text instead,
    and there is no ``sentence_to_index``, as AllenNLP writes none then. A
    blank line is a sentence of 0 tokens. Each dataset holds the spec's
    output (:data:`~bilm_keras.embedding.outputs.EMBEDDING_OUTPUTS`).

    The file's attributes record how it was made:

    * ``options_file``, ``weight_file``, ``vocab_file`` and
      ``dataset_file``: absolute paths, with ``""`` for no vocabulary.
    * ``output``, and ``layers``: the layer ids kept, averaged or mixed.
    * ``dtype``, and ``layout``: the datasets' axes.
    * ``n_sentences``, and ``keys``: ``"line_number"`` or ``"sentence"``.
    * ``embedding_weight_file``: ``""`` for character input.
    * ``precision`` (``settings.precision``) and ``bilm_keras_version``.
    * for ``"mix"``, also ``mix_weights`` (the ``s_j`` applied, float64),
      ``gamma`` and ``mix_form`` (``"weights"`` or ``"logits"``). For
      logits, also ``mix_logits``, the raw weights given.

    The dump is stateless, so a sentence's vectors do not depend on the
    lines before it. bilm-tf's dump carried LSTM states from line to line.
    The input is checked before the model is loaded. A missing input, a
    line not in UTF-8, or no token at all raises
    :class:`~bilm_keras.data.sentence_file.SentenceFileError`. The input
    is read ``chunk_size`` lines at a time, and the file appears only when
    complete. It fixes glibc's mmap threshold for the process
    (:mod:`bilm_keras.embedding.memory`). Caching every layer in float32
    costs ``3 * 1024 * 4`` bytes per token for the published model. The
    spec's ``layers``, ``output="mix"`` and ``dtype="float16"`` store
    less.

    Returns:
        The number of sentences written.

    Example:
        >>> dump_bilm_embeddings(
        ...     "vocab.txt", "sentences.txt", "options.json",
        ...     "lm_weights.hdf5", "elmo.hdf5",
        ...     EmbeddingSpec(output="average", dtype="float16"),
        ...     DumpSettings(batch_size=64, progress=False))
    """
    # everything that needs no model first: a bad input fails in seconds
    if not isinstance(spec, EmbeddingSpec):
        raise TypeError(f"spec: expected an EmbeddingSpec, found "
                        f"{type(spec).__name__}")
    plan = plan_dump(options_file=options_file, weight_file=weight_file,
                     vocab_file=vocab_file, dataset_file=dataset_file,
                     spec=spec, settings=settings)
    record = dump_record(
        plan, spec, settings, options_file=options_file,
        weight_file=weight_file, vocab_file=vocab_file,
        dataset_file=dataset_file)
    alignment = None if not settings.alignment else read_alignment(
        settings.alignment, n_layers=plan.options.lstm.n_layers + 1,
        dim=2 * plan.options.lstm.projection_dim)

    def embed_lines(start, stop):  # (text, array) of lines [start, stop)
        # the process's malloc: freed blocks back to the system (memory)
        return_freed_memory_for_bulk_embedding()
        backbone = load_backbone(
            plan.options, weight_file,
            use_character_inputs=plan.embedding_weight_file is None,
            embedding_weight_file=plan.embedding_weight_file,
            precision=settings.precision)
        embedder = BulkEmbedder(backbone, devices=settings.devices,
                                options=plan.options, alignment=alignment)
        bar = None
        if settings.progress:
            bar = ProgressBar(stop - start, total_tokens=sum(
                len(line.split()) for line in itertools.islice(
                    read_sentence_lines(dataset_file), start, stop)),
                label=os.path.basename(os.fspath(dataset_file)))
        texts = collections.deque()  # read, not yet handed out

        def sentences():
            for line in itertools.islice(
                    read_sentence_lines(dataset_file), start, stop):
                texts.append(line.strip())
                yield line.split()

        try:
            for emb in embedder.iter_embeddings(
                    sentences(), batch_size=settings.batch_size,
                    vocab_file=vocab_file, spec=spec,
                    chunk_size=settings.chunk_size,
                    on_batch=bar.update if bar is not None else None):
                yield texts.popleft(), emb  # in the spec's dtype
        finally:
            if bar is not None:
                bar.close()  # ends the line, before any error message

    return run_durably(
        outfile, identity=record.identity, lines=plan.lines,
        resume=settings.resume,
        locations=file_locations(
            options_file=options_file, weight_file=weight_file,
            vocab_file=vocab_file, dataset_file=dataset_file,
            embedding_weight_file=plan.embedding_weight_file),
        shard=settings.shard, embed_lines=embed_lines, attrs=record.attrs,
        on_event=settings.on_event)
