"""A frozen biLM's layers computed once, read back as ``tf.data`` batches
to train :class:`~bilm_keras.ELMoEmbedding`'s mix and a head on them.

Two sources have one reader. A small set comes from the arrays of
:meth:`ELMoEmbedding.embed_layers`, in memory. A large set comes from the
HDF5 file of :func:`~bilm_keras.dump_bilm_embeddings` with every layer,
``EmbeddingSpec(output="all")`` in float32 or float16, embedded once by
the bulk path. Either way each batch holds the layers zero-padded to its
longest sentence, which is how the layer tells the tokens from the
padding.
"""

from __future__ import annotations

import os
from typing import Optional, Sequence

import h5py
import numpy as np
import tensorflow as tf


class CachedLayersError(ValueError):
    """A cache that does not hold every layer of every sentence."""


def _hdf5_sentences(path: str):
    """``(n_sentences, read(i))`` of a dump with every layer."""
    with h5py.File(path, "r") as f:
        output = f.attrs.get("output")
        if output != "all":
            raise CachedLayersError(
                f"{path}: output: expected 'all' (every layer, what the "
                f"mix reads), found {output!r}")
        n = int(f.attrs["n_sentences"])

    def read(i):
        with h5py.File(path, "r") as f:
            return f[str(i)][...]

    return n, read


def cached_layers_dataset(
    source: str | os.PathLike | Sequence[np.ndarray],
    targets: Optional[Sequence] = None,
    batch_size: int = 32,
) -> tf.data.Dataset:
    """Cached layers as batches for ``model.fit``.

    Args:
        source: the HDF5 file of :func:`~bilm_keras.dump_bilm_embeddings`
            with ``output="all"``, or the list of
            :meth:`ELMoEmbedding.embed_layers`.
        targets: None, or one target per sentence: a number (a sentence
            label) or a sequence of one number per token (tags).
        batch_size: int, sentences per batch, in the source's order.

    Returns:
        A dataset of ``layers`` `(batch, L + 1, time, dim)` float32, zero
        past each sentence's end, or of ``(layers, targets)``: `(batch,)`,
        or `(batch, time)` padded with 0.

    Raises:
        CachedLayersError: a dump without every layer, or targets of
            another length than the sentences.
    """
    if isinstance(source, (str, os.PathLike)):
        n, read = _hdf5_sentences(os.fspath(source))
        with h5py.File(source, "r") as f:
            first = f["0"].shape if n else (0, 0, 0)
    else:
        arrays = list(source)
        n, read = len(arrays), arrays.__getitem__
        first = arrays[0].shape if n else (0, 0, 0)
    k, dim = int(first[0]), int(first[-1])
    layers_spec = tf.TensorSpec((k, None, dim), tf.float32)
    if targets is not None and len(targets) != n:
        raise CachedLayersError(f"targets: expected one per sentence "
                                f"({n}), found {len(targets)}")
    per_token = targets is not None and n and np.ndim(targets[0]) == 1

    def sentences():
        for i in range(n):
            layers = np.asarray(read(i), np.float32)  # (K, n_i, D)
            if targets is None:
                yield layers
            else:
                yield layers, np.asarray(targets[i], np.float32)

    if targets is None:
        signature = layers_spec
    else:
        signature = (layers_spec, tf.TensorSpec(
            (None,) if per_token else (), tf.float32))
    dataset = tf.data.Dataset.from_generator(sentences,
                                             output_signature=signature)
    # a known length: Keras counts the steps of an epoch
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(n))
    return dataset.padded_batch(batch_size)
