"""In-graph ids of an ELMoForManyLangs model: the signatures'
``ManyLangsBatcher``.

It uses TensorFlow ops only, hash tables and string ops, so it runs
inside a SavedModel with no Python. The result is the ids tensor of a
converted model (``ManyLangsBatcher.batch_sentences``). It is computed as
upstream's ``read_list`` and ``create_one_batch`` compute theirs:

* every sentence becomes ``<bos>`` tokens ``<eos>``.
* a token longer than ``MC - 2`` **code points** is cut to ``MC - 2``.
  With ``unicode_decode``, a non-BMP character is one code point, as in a
  Python ``str``. The cut string is what the word lookup sees.
* a token's char row is ``[<eow>, c_1 .. c_k, <bow>, <pad> ...]``, with
  upstream's swapped markers: its ``bow_id`` reads ``char2id['<eow>']``.
  A character not in ``char.dic`` is ``<oov>``.
* a token that is exactly ``<bos>`` or ``<eos>``, after the cut, gets the
  boundary row ``[<eow>, <bos>|<eos>, <bow>, <pad> ...]``.
* the word id is ``word.dic``'s id of the cut token, else ``<oov>``.
* every id is shifted by +1, so that 0 marks a position past a
  sentence's end, the whole row, word column included.

Shapes (``B`` = batch, ``T`` = most tokens in a row, ``MC`` =
max_characters_per_token, ``W`` = MC + 1 with a word part, else MC)::

    ids   int32 (B, T + 2, W)   columns 0..MC-1 chars, column MC the word

Input bytes that are not UTF-8 (which a Python ``str`` cannot hold) decode
to U+FFFD, one code point per bad byte sequence.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

import tensorflow as tf

from bilm_keras.data.manylangs_dictionaries import read_dictionaries
from bilm_keras.export.graph_char_ids import (
    ragged_tokens,
    split_sentences,
    with_boundaries,
)

BOS_TOKEN = "<bos>"
EOS_TOKEN = "<eos>"
OOV_TOKEN = "<oov>"


class ManyLangsGraphIds(tf.Module):
    """Token strings -> a converted ELMoForManyLangs model's ids, in graph.

    The dictionaries become two ``tf.lookup.StaticHashTable``s whose keys
    and values are constants of the graph. So a SavedModel that holds this
    module needs no file at load time. ``saved_model_export`` still ships the
    ``.dic`` files as assets beside them, for the record.

    Args:
        char_dic: ``{token: id}`` as :func:`read_char_dic` returns it. Only
            single-code-point tokens can match a character, since upstream
            looks up ``str`` characters. The specials are read by name.
        word_dic: ``{token: id}`` as :func:`read_word_dic` returns it, or
            None for a model without a word part.
        max_characters_per_token: the options' ``MC`` (at least 7: upstream
            asserts ``len('<bos>') + 2 <= MC``).

    Example:
    >>> ids = ManyLangsGraphIds.from_files("char.dic", "word.dic", 20)
    >>> ids.sentences_to_ids(tf.constant(["我 在 北京"])).shape
    TensorShape([1, 5, 21])
    """

    def __init__(
        self,
        char_dic: Mapping[str, int],
        word_dic: Optional[Mapping[str, int]],
        max_characters_per_token: int,
        name: str = "manylangs_ids",
    ):
        super().__init__(name=name)
        if max_characters_per_token < 7:
            raise ValueError(
                "max_characters_per_token: expected at least 7 (upstream "
                "asserts len('<bos>') + 2 <= max_characters_per_token), "
                f"found {max_characters_per_token}"
            )
        self.max_characters_per_token = max_characters_per_token
        self.has_word_part = word_dic is not None
        self.width = max_characters_per_token + int(self.has_word_part)
        # upstream's swap: its bow_id is char2id['<eow>'] and vice versa
        self.begin_char = char_dic["<eow>"]
        self.end_char = char_dic["<bow>"]
        self.pad_char = char_dic["<pad>"]
        self.oov_char = char_dic[OOV_TOKEN]
        self.bos_char = char_dic[BOS_TOKEN]
        self.eos_char = char_dic[EOS_TOKEN]
        self.n_chars = len(char_dic)
        chars = [(ord(c), i) for c, i in char_dic.items() if len(c) == 1]
        self.char_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant([c for c, _ in chars], tf.int32),
                tf.constant([i for _, i in chars], tf.int32),
            ),
            default_value=self.oov_char,
        )
        if self.has_word_part:
            self.bos_word = word_dic[BOS_TOKEN]
            self.eos_word = word_dic[EOS_TOKEN]
            self.n_words = len(word_dic)
            self.word_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(word_dic.keys()), tf.string),
                    tf.constant(list(word_dic.values()), tf.int32),
                ),
                default_value=word_dic[OOV_TOKEN],
            )
        else:
            self.bos_word = self.eos_word = None
            self.n_words = 0

    @classmethod
    def from_files(
        cls,
        char_dic: str | os.PathLike,
        word_dic: Optional[str | os.PathLike],
        max_characters_per_token: int,
    ) -> "ManyLangsGraphIds":
        """Reads ``char.dic`` (and ``word.dic`` unless None) as upstream."""
        return cls(*read_dictionaries(char_dic, word_dic),
                   max_characters_per_token)

    # ------------------------------------------------------------- one row
    def _boundary_row(self, char: int, word: int) -> list:
        row = [self.begin_char, char, self.end_char]
        row += [self.pad_char] * (self.max_characters_per_token - 3)
        return row + ([word] if self.has_word_part else [])

    def token_ids(self, tokens: tf.Tensor) -> tf.Tensor:
        """Upstream's ids of a flat batch of tokens, **without** the +1.

        Args:
            tokens: `(n,)` tf.string, UTF-8.

        Returns:
            `(n, W)` int32: the char row (and the word id in column MC).
        """
        # N=tokens, K=code points kept, MC=max_characters_per_token
        mc = self.max_characters_per_token
        points = tf.strings.unicode_decode(
            tokens, "UTF-8", errors="replace"
        )[:, : mc - 2]  # (N, (K)) int32, cut BEFORE the word lookup
        chars = points.with_flat_values(
            self.char_table.lookup(points.flat_values)
        )  # (N, (K))
        n = tf.shape(tokens, out_type=tf.int64)[0]
        row = tf.concat(
            [tf.fill([n, 1], self.begin_char), chars,
             tf.fill([n, 1], self.end_char)], axis=1,
        ).to_tensor(default_value=self.pad_char, shape=[None, mc])  # (N, MC)
        cut = tf.strings.unicode_encode(points, "UTF-8")  # (N,)
        if self.has_word_part:
            word = self.word_table.lookup(cut)[:, None]  # (N, 1)
            row = tf.concat([row, word], axis=1)  # (N, MC + 1)
        for token, char, word in (
            (BOS_TOKEN, self.bos_char, self.bos_word),
            (EOS_TOKEN, self.eos_char, self.eos_word),
        ):
            special = tf.constant(self._boundary_row(char, word), tf.int32)
            row = tf.where(tf.equal(cut, token)[:, None], special[None], row)
        return row  # (N, W)

    # ----------------------------------------------------------- batches
    def batch_ids(self, tokens: tf.RaggedTensor,
                  max_tokens=None) -> tf.Tensor:
        """The ids tensor of a ragged batch of tokenized sentences.

        Args:
            tokens: `(batch, (n_tokens))` ragged tf.string.
            max_tokens: pad every row to this many tokens, at least the
                longest row's. The default is the longest row's.

        Returns:
            `(batch, max_n_tokens + 2, W)` int32: ``<bos>``, the tokens and
            ``<eos>`` per row, +1-shifted, 0 past each row's end. An empty
            batch gives `(0, 2, W)`.
        """
        # N=all tokens, W=ids per position
        words = self.token_ids(tokens.flat_values) + 1  # (N, W)
        bos, eos = (tf.constant(self._boundary_row(char, word), tf.int32) + 1
                    for char, word in ((self.bos_char, self.bos_word),
                                       (self.eos_char, self.eos_word)))
        return with_boundaries(tokens, words, bos, eos, max_tokens)

    def sentences_to_ids(self, sentences: tf.Tensor) -> tf.Tensor:
        """`(batch,)` untokenized tf.string, split as ``str.split()`` ->
        `(batch, T + 2, W)`."""
        return self.batch_ids(split_sentences(sentences))

    def padded_tokens_to_ids(self, tokens: tf.Tensor,
                             sequence_len: tf.Tensor) -> tf.Tensor:
        """google/elmo/3's ``tokens`` input -> the ids tensor.

        Args:
            tokens: `(batch, max_len)` tf.string, where a token may hold
                spaces. Entries at or past a row's ``sequence_len`` are
                ignored.
            sequence_len: `(batch,)` integer, each in ``[0, max_len]``
                (checked).

        Returns:
            `(batch, max_len + 2, W)` int32: the time axis keeps the
            input's width.
        """
        ragged, max_len = ragged_tokens(tokens, sequence_len)
        return self.batch_ids(ragged, max_tokens=max_len)
