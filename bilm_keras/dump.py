"""Dump token embeddings or whole-dataset biLM embeddings to HDF5."""

from __future__ import annotations

import sys
import time
from typing import Iterator, List, Optional, Sequence

import h5py
import numpy as np
import tensorflow as tf

from bilm_keras.atomic_files import atomic_path
from bilm_keras.data.vocabulary import UnicodeCharsVocabulary
from bilm_keras.models.bidirectional_language_model import (
    BidirectionalLanguageModel,
)


def dump_token_embeddings(
    vocab_file: str,
    options_file: str,
    weight_file: str,
    outfile: str,
    *,
    batch_size: int = 1024,
) -> None:
    """Writes the char-CNN embedding of every vocabulary token.

    The result (dataset ``embedding``, `(n_vocab, projection_dim)`) is the
    ``embedding_weight_file`` of a token-input
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


def _read_sentences(dataset_file: str) -> Iterator[List[str]]:
    with open(dataset_file, encoding="utf-8") as fin:
        for line in fin:
            yield line.split()


def dump_bilm_embeddings(
    vocab_file: Optional[str],
    dataset_file: str,
    options_file: str,
    weight_file: str,
    outfile: str,
    *,
    batch_size: int = 32,
    chunk_size: int = 4096,
    layers: Optional[Sequence[int]] = None,
    dtype: str = "float32",
    progress: bool = True,
) -> int:
    """Writes every layer's biLM embedding of every sentence of a file.

    One dataset per line of ``dataset_file`` (whitespace-tokenized, one
    sentence per line), named by its 0-based line number, shaped
    `(n_lm_layers + 1, n_tokens, 2 * projection_dim)`; an empty line gives
    ``n_tokens = 0``. Stateless, so a sentence's vectors do not depend on
    the lines before it (bilm-tf's dump carried LSTM states from line to
    line). The file appears only when complete.

    Caching every layer in float32 costs ``3 * 1024 * 4`` bytes per token
    for the published model. Two exact ways to store less:

    Args:
        layers: keep only these biLM layers (e.g. ``[1, 2]``), in this order.
        dtype: ``"float16"`` halves the file (about 3 decimal digits).

    Returns:
        The number of sentences written.
    """
    if dtype not in ("float32", "float16"):
        raise ValueError(f"dtype: expected 'float32' or 'float16', found "
                         f"{dtype!r}")
    bilm = BidirectionalLanguageModel(options_file, weight_file)
    n_layers = bilm.backbone.n_layers + 1
    if layers is not None and (
        not layers or any(not 0 <= i < n_layers for i in layers)
    ):
        raise ValueError(f"layers: expected indices in 0..{n_layers - 1}, "
                         f"found {list(layers)}")
    n_done, started = 0, time.time()
    with atomic_path(outfile) as tmp, h5py.File(tmp, "w") as fout:
        sentences = _read_sentences(dataset_file)
        while True:
            chunk = [s for _, s in zip(range(chunk_size), sentences)]
            if not chunk:
                break
            embeddings = bilm.embed_sentences(
                chunk, batch_size=batch_size, vocab_file=vocab_file
            )
            for emb in embeddings:
                if layers is not None:
                    emb = emb[list(layers)]
                fout.create_dataset(str(n_done), data=emb.astype(dtype))
                n_done += 1
            if progress:
                rate = n_done / max(time.time() - started, 1e-9)
                print(f"\r{dataset_file}: {n_done} sentences "
                      f"({rate:.1f}/s)", end="", file=sys.stderr)
    if progress and n_done:
        print(file=sys.stderr)
    return n_done
