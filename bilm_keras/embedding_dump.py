"""Embeddings to HDF5 files: the token table of a biLM (bilm-tf's
``dump_token_embeddings``) and whole-dataset biLM embeddings
(``dump_bilm_embeddings``). Weights are written by
:mod:`bilm_keras.weights`."""

from __future__ import annotations

import json
import os
from typing import List, Optional, Sequence

import h5py
import numpy as np
import tensorflow as tf

from bilm_keras import __version__
from bilm_keras.atomic_files import atomic_path
from bilm_keras.data.sentence_file import (
    check_sentence_file,
    read_sentence_lines,
)
from bilm_keras.data.vocabulary import UnicodeCharsVocabulary
from bilm_keras.embedding_outputs import (
    EMBEDDING_OUTPUTS,
    embedding_layer_ids,
)
from bilm_keras.models.bidirectional_language_model import (
    BidirectionalLanguageModel,
)
from bilm_keras.options import BiLMOptions
from bilm_keras.progress import ProgressBar


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
    """
    bilm = BidirectionalLanguageModel(options_file, weight_file)
    backbone = bilm.backbone
    vocab = UnicodeCharsVocabulary(
        vocab_file, backbone.max_characters_per_token
    )
    char_ids = vocab.word_char_ids + 1  # (V, C), +1: 0 is the mask

    @tf.function(input_signature=[
        tf.TensorSpec((None, backbone.max_characters_per_token), tf.int32)
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
    with atomic_path(outfile) as tmp, h5py.File(tmp, "w") as fout:
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
    progress: bool = True,
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
    * ``"top"``, ``"average"``: `(n_tokens, 2 * projection_dim)`;
    * ``"sentence_mean"``: `(2 * projection_dim,)`.

    The file's attributes record how it was made: ``options_file``,
    ``weight_file``, ``vocab_file`` and ``dataset_file`` (absolute paths;
    ``""`` for no vocabulary), ``output``, ``layers`` (the layer ids kept or
    averaged), ``dtype``, ``layout`` (the datasets' axes), ``n_sentences``
    and ``bilm_keras_version``.

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
        output: ``"all"``, ``"top"``, ``"average"`` or
            ``"sentence_mean"`` (above).
        progress: a progress bar on stderr (sentences, tokens/s, ETA),
            updated after every batch.
        batch_size: None (default): the embedder's own compute batches
            (:meth:`~bilm_keras.BulkEmbedder.embed_sentences`); an int:
            that many sentences per LSTM batch.

    Returns:
        The number of sentences written.
    """
    if dtype not in ("float32", "float16"):
        raise ValueError(f"dtype: expected 'float32' or 'float16', found "
                         f"{dtype!r}")
    # everything that needs no model first: a bad input fails in seconds
    layer_ids = embedding_layer_ids(
        layers, BiLMOptions.from_json(options_file).lstm.n_layers, output)
    stats = check_sentence_file(dataset_file)
    bilm = BidirectionalLanguageModel(options_file, weight_file)
    bar = None
    if progress:
        bar = ProgressBar(stats.n_lines, total_tokens=stats.n_tokens,
                          label=os.path.basename(os.fspath(dataset_file)))
    lines = read_sentence_lines(dataset_file)
    texts: List[str] = []  # each line's text, in order

    def sentences():
        for line in lines:
            texts.append(line.strip())
            yield line.split()

    embeddings = bilm.iter_embeddings(
        sentences(), batch_size=batch_size, vocab_file=vocab_file,
        output=output, layers=layers, chunk_size=chunk_size,
        on_batch=bar.update if bar is not None else None,
    )
    n_done = 0
    try:
        with atomic_path(outfile) as tmp, h5py.File(tmp, "w") as fout:
            for emb in embeddings:
                fout.create_dataset(str(n_done),
                                    data=emb.astype(dtype, copy=False))
                n_done += 1
            # AllenNLP's layout: one JSON string, sentence -> dataset name
            sentence_to_index = {
                text: str(i) for i, text in enumerate(texts)}
            index = fout.create_dataset("sentence_to_index", (1,),
                                        dtype=h5py.string_dtype())
            index[0] = json.dumps(sentence_to_index)
            fout.attrs.update(
                options_file=os.path.abspath(options_file),
                weight_file=os.path.abspath(weight_file),
                vocab_file=os.path.abspath(vocab_file) if vocab_file else "",
                dataset_file=os.path.abspath(dataset_file),
                output=output,
                layers=np.asarray(layer_ids, np.int64),
                dtype=dtype,
                layout=EMBEDDING_OUTPUTS[output],
                n_sentences=n_done,
                bilm_keras_version=__version__,
            )
    finally:
        if bar is not None:
            bar.close()  # ends the line, before any error message
    return n_done
