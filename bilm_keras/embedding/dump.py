"""Embeddings to HDF5 files: the token table of a biLM (bilm-tf's
``dump_token_embeddings``) and whole-dataset biLM embeddings
(``dump_bilm_embeddings``, written through a durable run:
:mod:`bilm_keras.embedding.runs`). Weights are written by
:mod:`bilm_keras.weights`.

Both load the backbone from its files
(:func:`~bilm_keras.models.backbone_loading.load_backbone`) and embed with
a :class:`~bilm_keras.embedding.bulk_embedder.BulkEmbedder`; neither needs
the inference facade."""

from __future__ import annotations

import collections
import itertools
import os
from typing import Callable, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from bilm_keras._utils.atomic_files import atomic_hdf5
from bilm_keras.data.manylangs_vocabulary import ManyLangsCharsVocabulary
from bilm_keras.data.sentence_file import read_sentence_lines
from bilm_keras.data.vocabulary import UnicodeCharsVocabulary
from bilm_keras.embedding.bulk_embedder import BulkEmbedder
from bilm_keras.embedding.dump_plan import dump_record, plan_dump
from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.embedding.progress import ProgressBar
from bilm_keras.embedding.runs import RunEvent, file_locations, run_durably
from bilm_keras.models.backbone_loading import load_backbone
from bilm_keras.options import BiLMOptions

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

    @tf.function(input_signature=[
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


def dump_bilm_embeddings(
    vocab_file: Optional[str],
    dataset_file: str,
    options_file: str,
    weight_file: str,
    outfile: str,
    *,
    batch_size: Optional[int] = None,
    chunk_size: int = 4096,
    layers: Optional[Sequence[int]] = None,
    dtype: str = "float32",
    output: str = "all",
    mix_weights: Optional[Sequence[float]] = None,
    mix_logits: Optional[Sequence[float]] = None,
    gamma: Optional[float] = None,
    embedding_weight_file: Optional[str] = None,
    use_sentence_keys: bool = False,
    progress: bool = True,
    resume: bool = False,
    shard: Optional[Tuple[int, int]] = None,
    devices: Optional[Sequence[str]] = None,
    spec: Optional[EmbeddingSpec] = None,
    on_event: Optional[Callable[[RunEvent], None]] = None,
) -> int:
    """Writes the biLM embedding of every sentence of a file to HDF5.

    AllenNLP's ``elmo`` command's layout: one dataset per line of
    ``dataset_file`` (whitespace-tokenized, one sentence per line, UTF-8),
    named by its 0-based line number, and a dataset ``sentence_to_index``:
    one JSON string mapping each line's text (stripped) to its dataset's
    name (for a repeated line, its last). A blank line is a sentence of
    0 tokens. Each dataset holds what ``output`` asks
    (:meth:`~bilm_keras.BidirectionalLanguageModel.embed_sentences`):

    * ``"all"``: `(n_lm_layers + 1, n_tokens, 2 * projection_dim)` (or the
      ``layers`` kept);
    * ``"top"``, ``"average"``, ``"mix"``: `(n_tokens, 2 * projection_dim)`;
    * ``"sentence_mean"``: `(2 * projection_dim,)`.

    With ``use_sentence_keys`` (AllenNLP's ``--use-sentence-keys``) each
    dataset is named by its line's text (stripped) instead, and there is no
    ``sentence_to_index`` (AllenNLP writes none then). Every line must be a
    possible, distinct name, checked before anything is embedded (AllenNLP
    stopped at a repeat with the file half-written): no blank line, no two
    lines alike (both line numbers named), no ``/`` (HDF5 would read
    groups), no NUL, not ``.``.

    The file's attributes record how it was made: ``options_file``,
    ``weight_file``, ``vocab_file`` and ``dataset_file`` (absolute paths;
    ``""`` for no vocabulary), ``output``, ``layers`` (the layer ids kept or
    averaged or mixed), ``dtype``, ``layout`` (the datasets' axes),
    ``n_sentences``, ``keys`` (``"line_number"`` or ``"sentence"``),
    ``embedding_weight_file`` (``""`` for character input) and
    ``bilm_keras_version``; for ``"mix"`` also ``mix_weights`` (the ``s_j``
    applied, float64), ``gamma``, ``mix_form`` (``"weights"`` or
    ``"logits"``) and, for logits, ``mix_logits`` (the raw weights given).

    Stateless, so a sentence's vectors do not depend on the lines before
    it (bilm-tf's dump carried LSTM states from line to line). The input is
    checked before the model is loaded (missing, not UTF-8 with its line,
    no token at all: :class:`~bilm_keras.data.sentence_file.
    SentenceFileError`), read ``chunk_size`` lines at a time, and the file
    appears only when complete.

    Caching every layer in float32 costs ``3 * 1024 * 4`` bytes per token
    for the published model. To store less:

    Args:
        layers: keep only these biLM layers (e.g. ``[1, 2]``), in this
            order, or average only these.
        dtype: ``"float16"`` halves the file (about 3 decimal digits).
        output: ``"all"``, ``"top"``, ``"average"``, ``"mix"`` or
            ``"sentence_mean"`` (above). ``"mix"`` stores one vector per
            token, ``gamma * sum_j s_j h_j``, a third of ``"all"`` for the
            published model.
        mix_weights, mix_logits, gamma: the mix of ``"mix"``, as
            :meth:`~bilm_keras.BidirectionalLanguageModel.embed_sentences`
            takes them: normalised ``s_j`` as given, or a trained
            ``ScalarMix``'s raw weights (``softmax(w + 1/K)`` applied).
        embedding_weight_file: run from token ids with this token table
            (from :func:`dump_token_embeddings` of ``vocab_file``, as
            bilm-tf's ``usage_token.py``): the same vectors without the
            char-CNN. ``vocab_file`` is then required. Default: character
            input, or for options without ``char_cnn`` (a token-input
            model) the table in ``weight_file``.
        use_sentence_keys: name datasets by their sentence (above).
        progress: a progress bar on stderr (sentences, tokens/s, ETA),
            updated after every batch.
        resume: continue a killed run of the same inputs and flags from
            its last whole part (:mod:`bilm_keras.embedding.runs`: the
            run's progress is kept in ``outfile + ".partial/"`` until the
            output is complete).
        shard: ``(K, N)``: embed only shard ``K`` of ``N`` (of the
            ``c = ceil(n / chunk_size)`` chunks of the single run, chunks
            ``[K * c // N, (K + 1) * c // N)``: :func:`~bilm_keras.
            embedding.shards.shard_lines`; datasets keep their line
            numbers); :func:`~bilm_keras.embedding.merge.
            merge_embedding_files` joins the shards, bit for bit the
            single run's file.
        devices: the devices to embed on (e.g. ``["GPU:0", "GPU:1"]``);
            default: every GPU, else the CPU.
        batch_size: None (default): the embedder's own compute batches
            (:meth:`~bilm_keras.BulkEmbedder.embed_sentences`); an int:
            that many sentences per LSTM batch.
        spec: instead of ``output``, ``layers``, ``dtype``,
            ``mix_weights``, ``mix_logits`` and ``gamma`` (which then keep
            their defaults): an :class:`~bilm_keras.embedding.outputs.
            EmbeddingSpec`.
        on_event: called at each point of the run
            (:class:`~bilm_keras.embedding.runs.RunEvent`: each line
            written, each dataset merged, ...), e.g. to log or to stop it.

    Returns:
        The number of sentences written.
    """
    # everything that needs no model first: a bad input fails in seconds
    spec = EmbeddingSpec.from_arguments(
        spec, output=output, layers=layers, mix_weights=mix_weights,
        mix_logits=mix_logits, gamma=gamma, dtype=dtype)
    plan = plan_dump(options_file=options_file, weight_file=weight_file,
                     vocab_file=vocab_file, dataset_file=dataset_file,
                     spec=spec, embedding_weight_file=embedding_weight_file,
                     use_sentence_keys=use_sentence_keys, shard=shard,
                     chunk_size=chunk_size)
    options = plan.options
    embedding_weight_file = plan.embedding_weight_file
    record = dump_record(
        plan, spec, options_file=options_file, weight_file=weight_file,
        vocab_file=vocab_file, dataset_file=dataset_file,
        batch_size=batch_size, chunk_size=chunk_size)

    def embed_lines(start, stop):  # (text, array) of lines [start, stop)
        backbone = load_backbone(
            options, weight_file,
            use_character_inputs=embedding_weight_file is None,
            embedding_weight_file=embedding_weight_file)
        embedder = BulkEmbedder(backbone, devices=devices, options=options)
        bar = None
        if progress:
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
                    sentences(), batch_size=batch_size,
                    vocab_file=vocab_file, spec=spec, chunk_size=chunk_size,
                    on_batch=bar.update if bar is not None else None):
                yield texts.popleft(), emb  # in the spec's dtype
        finally:
            if bar is not None:
                bar.close()  # ends the line, before any error message

    return run_durably(
        outfile, identity=record.identity, lines=plan.lines, resume=resume,
        locations=file_locations(
            options_file=options_file, weight_file=weight_file,
            vocab_file=vocab_file, dataset_file=dataset_file,
            embedding_weight_file=embedding_weight_file),
        shard=shard, embed_lines=embed_lines, attrs=record.attrs,
        on_event=on_event)
