"""The training vocabulary of a converted ELMoForManyLangs model.

Adapting a converted model (``train --init_weights``) reads the user's text
with a bilm-tf ``vocab.txt`` for the softmax targets. But its inputs must
be the model's own ids: char ids from ``char.dic`` and word ids from
``word.dic``. :class:`ManyLangsCharsVocabulary` is the
:class:`UnicodeCharsVocabulary` that gives them, so :class:`LMDataset`
reads it unchanged. Its char rows are `(W,)`, upstream's ``MC`` char ids
followed by upstream's word id. ``W`` is ``MC + 1``, or ``MC`` without a
word part. The rows are unshifted, since the dataset adds the +1.
``<S>`` and ``</S>`` get upstream's ``<bos>`` and ``<eos>`` rows.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

import numpy as np

from bilm_keras.data.manylangs_batcher import BOS, EOS, upstream_token_ids
from bilm_keras.data.manylangs_dictionaries import read_dictionaries
from bilm_keras.data.vocabulary import (
    UnicodeCharsVocabulary,
    Vocabulary,
    VocabularyError,
)


class ManyLangsCharsVocabulary(UnicodeCharsVocabulary):
    """A vocabulary whose char rows are an ELMoForManyLangs model's ids.

    A token's row is made as upstream's ``read_list`` and
    ``create_one_batch`` make it (the fixture README's sections 1-3):

    * the token is cut to ``MC - 2`` code points.
    * its chars are ``[<eow>, c_1 .. c_k, <bow>, <pad> ...]``, with
      upstream's swapped markers. A character not in ``char.dic`` is
      ``<oov>``.
    * the cut token ``<bos>`` or ``<eos>`` has
      ``[<eow>, <bos>|<eos>, <bow>, <pad> ...]`` instead.
    * then comes ``word.dic``'s id of the cut token, ``<oov>`` if absent.

    Args:
        filename: the softmax vocabulary (bilm-tf ``vocab.txt``).
        char_dic: ``{char: id}`` (:func:`read_char_dic`).
        word_dic: ``{word: id}`` (:func:`read_word_dic`), or None for a
            model without a word part.
        max_characters_per_token: the options' ``MC`` (at least 7).
        **kwargs: :class:`Vocabulary`'s (``validate_file``).

    ``max_characters_per_token`` (the property) is the row width ``W``,
    the last axis of :class:`LMDataset`'s ``tokens_characters``.

    Example:
    >>> vocab = ManyLangsCharsVocabulary.from_files(
    ...     "vocab.txt", "char.dic", "word.dic", 20)
    >>> vocab.word_to_char_ids("今天").shape
    (21,)
    """

    def __init__(
        self,
        filename: Optional[str | os.PathLike],
        char_dic: Mapping[str, int],
        word_dic: Optional[Mapping[str, int]],
        max_characters_per_token: int,
        **kwargs,
    ):
        # not UnicodeCharsVocabulary.__init__: its rows are UTF-8 bytes
        Vocabulary.__init__(self, filename, **kwargs)
        if max_characters_per_token < 7:
            raise VocabularyError(
                "max_characters_per_token: expected at least 7 (upstream "
                "asserts len('<bos>') + 2 <= max_characters_per_token), "
                f"found {max_characters_per_token}"
            )
        self.chars_per_token = max_characters_per_token
        self.char_dic = dict(char_dic)
        self.word_dic = None if word_dic is None else dict(word_dic)
        self._max_characters_per_token = (
            max_characters_per_token + int(word_dic is not None))
        # the bilm-tf boundary tokens <S>/</S> are upstream's <bos>/<eos>
        self._build_char_table(self._token_char_ids(BOS),
                               self._token_char_ids(EOS))

    @classmethod
    def from_files(
        cls,
        filename: Optional[str | os.PathLike],
        char_dic: str | os.PathLike,
        word_dic: Optional[str | os.PathLike],
        max_characters_per_token: int,
        **kwargs,
    ) -> "ManyLangsCharsVocabulary":
        """Reads ``char.dic`` (and ``word.dic`` unless None) as upstream."""
        return cls(
            filename, *read_dictionaries(char_dic, word_dic),
            max_characters_per_token, **kwargs,
        )

    def _token_char_ids(self, token: str) -> np.ndarray:
        """Upstream's unshifted ids of one token: `(W,)` int32."""
        return upstream_token_ids(token, self.char_dic, self.word_dic,
                                  self.chars_per_token).astype(np.int32)
