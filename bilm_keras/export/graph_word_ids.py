"""In-graph ids of a word-input model: the signatures' ``TokenBatcher``.

It uses TensorFlow ops only, one hash table and string ops, so it runs
inside a SavedModel with no Python. The result is what
:class:`~bilm_keras.TokenBatcher` gives a word-input model, such as a
converted Paddle baike model or a bilm-tf model trained on tokens. That is
one id per position, kept in a last axis of width 1, so that the
signatures have the same shapes as a character model's::

    ids   int32 (B, T + 2, 1)   <S>, the words, </S>, each +1; 0 pads

A word not in the vocabulary is ``<UNK>``. Words are matched exactly. The
vocabulary is read as :class:`~bilm_keras.data.vocabulary.Vocabulary`
reads it: stripped lines, ``!!!MAXTERMID`` skipped.
"""

from __future__ import annotations

import os

import tensorflow as tf

from bilm_keras.data.vocabulary import Vocabulary
from bilm_keras.export.graph_char_ids import (
    ragged_tokens,
    split_sentences,
    with_boundaries,
)


class WordGraphIds(tf.Module):
    """Token strings -> a word-input model's +1-shifted vocabulary ids, in
    graph.

    Args:
        words: the vocabulary in id order (``<S>``, ``</S>``, ``<UNK>``
            among them).
    """

    #: ids per position (the signatures' last axis)
    width = 1

    def __init__(self, words, name: str = "word_ids"):
        super().__init__(name=name)
        index = {}
        for i, word in enumerate(words):
            index[word] = i  # a repeated word keeps its last id, as Vocabulary
        self.n_words = len(words)
        self.bos, self.eos, self.unk = (index[t]
                                        for t in ("<S>", "</S>", "<UNK>"))
        keys = sorted(index)
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(keys, tf.string),
                tf.constant([index[k] for k in keys], tf.int32)),
            default_value=self.unk)

    @classmethod
    def from_file(cls, vocab_file: str | os.PathLike) -> "WordGraphIds":
        vocab = Vocabulary(os.fspath(vocab_file), validate_file=True)
        return cls([vocab.id_to_word(i) for i in range(vocab.size)])

    def batch_ids(self, tokens: tf.RaggedTensor,
                  max_tokens=None) -> tf.Tensor:
        """`(batch, (n_tokens))` ragged tf.string -> `(batch, max_tokens +
        2, 1)` int32: ``<S>``, the words and ``</S>``, +1-shifted, 0 past
        each row's end."""
        # N=all tokens
        ids = self.table.lookup(tokens.flat_values)[:, None] + 1  # (N, 1)
        bos = tf.constant([self.bos + 1], tf.int32)
        eos = tf.constant([self.eos + 1], tf.int32)
        return with_boundaries(tokens, ids, bos, eos, max_tokens)

    def sentences_to_ids(self, sentences: tf.Tensor) -> tf.Tensor:
        """`(batch,)` untokenized tf.string, split as ``str.split()`` ->
        `(batch, T + 2, 1)`."""
        return self.batch_ids(split_sentences(sentences))

    def padded_tokens_to_ids(self, tokens: tf.Tensor,
                             sequence_len: tf.Tensor) -> tf.Tensor:
        """google/elmo/3's ``tokens`` input -> `(batch, max_len + 2, 1)`."""
        ragged, max_len = ragged_tokens(tokens, sequence_len)
        return self.batch_ids(ragged, max_tokens=max_len)
