"""In-graph char ids: the exported signatures' equivalent of :class:`Batcher`.

Everything here is TensorFlow ops only, so it runs inside a SavedModel with
no Python. The result is bit-identical to
``Batcher(vocab, max_characters_per_token).batch_sentences(tokens)``:

* a token's UTF-8 bytes are truncated to ``max_characters_per_token - 2``
  **bytes**. A multi-byte character may be cut, as ``str.encode(...)[:n]``
  does. They are then wrapped in begin/end-of-word (258/259) and padded
  with 260.
* the literal tokens ``<S>`` and ``</S>`` become the sentence-boundary
  pseudo tokens, 256/257 between 258 and 259, as
  ``UnicodeCharsVocabulary.word_to_char_ids`` makes them.
* every sentence gets ``<S>`` in front and ``</S>`` at the end.
* every id is shifted by +1 so that 0 marks padding.

The vocabulary plays no part: ``UnicodeCharsVocabulary`` only caches the
same ids for its words.

Sentences are split into tokens on the characters for which Python's
``str.isspace()`` is true, exactly as ``sentence.split()``. Runs of
whitespace and leading or trailing whitespace produce no empty tokens.
TF-Hub's google/elmo/3 split on ``" "`` only. Input bytes are used as
given. Bytes that are not valid UTF-8, which a Python ``str`` cannot hold,
pass through as their byte values.
"""

from __future__ import annotations

import sys

import tensorflow as tf

from bilm_keras.data.vocabulary import (
    BOS_CHAR,
    BOS_TOKEN,
    BOW_CHAR,
    EOS_CHAR,
    EOS_TOKEN,
    EOW_CHAR,
    PAD_CHAR,
)


def _python_whitespace_class() -> str:
    """An RE2 character class of every code point ``str.isspace()`` accepts."""
    chars = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    return "[" + "".join(f"\\x{{{c:x}}}" for c in chars) + "]"


#: ``str.split()``'s separators, as an RE2 class (ASCII + Unicode spaces).
WHITESPACE_PATTERN = _python_whitespace_class()


def split_sentences(sentences: tf.Tensor) -> tf.RaggedTensor:
    """Splits `(batch,)` tf.string sentences into tokens like ``str.split()``.

    Returns:
        A `(batch, (n_tokens))` ragged tf.string tensor.
    """
    spaced = tf.strings.regex_replace(sentences, WHITESPACE_PATTERN, " ")
    return tf.strings.split(spaced)  # sep=None: collapses runs, no empties


def token_char_ids(tokens: tf.Tensor,
                   max_characters_per_token: int) -> tf.Tensor:
    """Char ids of a flat batch of tokens, **without** the +1 shift.

    Args:
        tokens: `(n,)` tf.string, UTF-8.
        max_characters_per_token: the options' value (at least 3).

    Returns:
        `(n, max_characters_per_token)` int32, as
        ``UnicodeCharsVocabulary(None, max_characters_per_token)
        .word_to_char_ids``.
    """
    if max_characters_per_token < 3:
        raise ValueError(f"max_characters_per_token: expected at least 3, "
                         f"found {max_characters_per_token}")
    # N=tokens, C=max_characters_per_token, K=bytes kept per token
    kept = tf.strings.substr(tokens, 0, max_characters_per_token - 2,
                             unit="BYTE")  # (N,)
    byte_strings = tf.strings.bytes_split(kept)  # (N, (K)) one byte each
    flat = tf.io.decode_raw(byte_strings.flat_values, tf.uint8)  # (sum K, 1)
    byte_ids = byte_strings.with_flat_values(
        tf.cast(tf.reshape(flat, [-1]), tf.int32)
    )  # (N, (K))
    n = tf.shape(tokens, out_type=tf.int64)[0]
    bow = tf.fill([n, 1], BOW_CHAR)
    eow = tf.fill([n, 1], EOW_CHAR)
    word = tf.concat([bow, byte_ids, eow], axis=1)  # (N, (K + 2))
    word = word.to_tensor(default_value=PAD_CHAR,
                          shape=[None, max_characters_per_token])

    def boundary(char):  # (C,) of <S> or </S>
        return tf.constant(
            [BOW_CHAR, char, EOW_CHAR]
            + [PAD_CHAR] * (max_characters_per_token - 3),
            tf.int32,
        )

    is_bos = tf.equal(tokens, BOS_TOKEN)[:, None]  # (N, 1)
    is_eos = tf.equal(tokens, EOS_TOKEN)[:, None]
    word = tf.where(is_bos, boundary(BOS_CHAR)[None], word)
    word = tf.where(is_eos, boundary(EOS_CHAR)[None], word)
    return word  # (N, C)


def batch_char_ids(
    tokens: tf.RaggedTensor, max_characters_per_token: int, max_tokens=None
) -> tf.Tensor:
    """Batcher's array for a ragged batch of tokenized sentences.

    Args:
        tokens: `(batch, (n_tokens))` ragged tf.string.
        max_characters_per_token: the options' value.
        max_tokens: pad every row to this many tokens, at least the
            longest row's. The default is the longest row's, as Batcher.

    Returns:
        `(batch, max_n_tokens + 2, max_characters_per_token)` int32: ``<S>``,
        the tokens and ``</S>`` per row, +1-shifted, 0 past each row's end.
        An empty batch gives `(0, 2, max_characters_per_token)`.
    """
    # B=batch, N=all tokens, C=max_characters_per_token
    words = token_char_ids(tokens.flat_values,
                           max_characters_per_token) + 1  # (N, C)
    bos = tf.constant(
        [BOW_CHAR, BOS_CHAR, EOW_CHAR]
        + [PAD_CHAR] * (max_characters_per_token - 3)
    ) + 1
    eos = tf.constant(
        [BOW_CHAR, EOS_CHAR, EOW_CHAR]
        + [PAD_CHAR] * (max_characters_per_token - 3)
    ) + 1
    return with_boundaries(tokens, words, bos, eos, max_tokens)


def with_boundaries(tokens: tf.RaggedTensor, rows: tf.Tensor,
                    bos: tf.Tensor, eos: tf.Tensor,
                    max_tokens=None) -> tf.Tensor:
    """Each sentence's token rows between a ``bos`` and an ``eos`` row,
    zero-padded into one tensor.

    Args:
        tokens: `(batch, (n_tokens))` ragged: the sentences' shape.
        rows: `(N, W)` int32, one row per token of ``tokens.flat_values``.
        bos, eos: `(W,)` int32, the boundary rows.
        max_tokens: pad every sentence to this many tokens, at least the
            longest's. The default is the longest's.

    Returns:
        `(batch, max_tokens + 2, W)` int32, 0 past each sentence's end. An
        empty batch gives `(0, 2, W)`.
    """
    # B=batch, W=ids per position
    batch = tokens.nrows()
    ones = tf.ones([batch], tf.int64)

    def boundary(row):  # (B, (1), W)
        return tf.RaggedTensor.from_row_lengths(
            tf.tile(row[None], [batch, 1]), ones)

    sentences = tf.concat([boundary(bos), tokens.with_flat_values(rows),
                           boundary(eos)], axis=1)  # (B, (n + 2), W)
    if max_tokens is None:
        max_tokens = tf.reduce_max(
            tf.concat([tokens.row_lengths(), tf.zeros([1], tf.int64)], 0)
        )
    time = tf.cast(max_tokens, tf.int64) + 2
    width = tf.shape(rows, out_type=tf.int64)[1]
    return sentences.to_tensor(default_value=0,
                               shape=tf.stack([batch, time, width]))


def sentences_to_char_ids(sentences: tf.Tensor,
                          max_characters_per_token: int) -> tf.Tensor:
    """`(batch,)` untokenized tf.string -> `(batch, time + 2,
    max_characters_per_token)`."""
    return batch_char_ids(split_sentences(sentences), max_characters_per_token)


def padded_tokens_to_char_ids(
    tokens: tf.Tensor, sequence_len: tf.Tensor, max_characters_per_token: int
) -> tf.Tensor:
    """google/elmo/3's ``tokens`` input -> Batcher's char ids.

    Args:
        tokens: `(batch, max_len)` tf.string. Entries at or past a row's
            ``sequence_len`` are ignored, and are conventionally ``""``.
        sequence_len: `(batch,)` integer, each in ``[0, max_len]`` (checked).

    Returns:
        `(batch, max_len + 2, max_characters_per_token)` int32: the time
        axis keeps the input's width, as google/elmo/3's outputs do.
    """
    ragged, max_len = ragged_tokens(tokens, sequence_len)
    return batch_char_ids(ragged, max_characters_per_token, max_tokens=max_len)


def ragged_tokens(tokens: tf.Tensor, sequence_len: tf.Tensor):
    """google/elmo/3's padded ``tokens`` and ``sequence_len`` (checked:
    each in ``[0, max_len]``) -> ``(tokens as ragged (batch, (n)), max_len)``.
    """
    sequence_len = tf.cast(sequence_len, tf.int64)
    max_len = tf.shape(tokens, out_type=tf.int64)[1]
    checks = [
        tf.debugging.assert_non_negative(
            sequence_len, message="sequence_len: expected values >= 0"
        ),
        tf.debugging.assert_less_equal(
            sequence_len, max_len,
            message="sequence_len: expected values <= tokens.shape[1]",
        ),
    ]
    with tf.control_dependencies(checks):
        ragged = tf.RaggedTensor.from_tensor(tokens, lengths=sequence_len)
    return ragged, max_len
