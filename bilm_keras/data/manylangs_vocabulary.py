"""The training vocabulary of a converted ELMoForManyLangs model.

Adapting a converted model (``train --init_weights``) reads the user's text
with a bilm-tf ``vocab.txt`` for the softmax targets, but its inputs must
be the model's own ids: char ids from ``char.dic`` and word ids from
``word.dic``. :class:`ManyLangsCharsVocabulary` is the
:class:`UnicodeCharsVocabulary` that gives them, so :class:`LMDataset`
reads it unchanged: its char rows are `(W,)` =
``[upstream's char ids (MC) ; upstream's word id]`` (W = MC + 1; MC
without a word part), unshifted (the dataset adds the +1), and ``<S>`` /
``</S>`` get upstream's ``<bos>`` / ``<eos>`` rows.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

import numpy as np

from bilm_keras.data.manylangs_batcher import upstream_token_ids
from bilm_keras.data.manylangs_dictionaries import read_char_dic, read_word_dic
from bilm_keras.data.vocabulary import (
    BOS_TOKEN,
    EOS_TOKEN,
    UnicodeCharsVocabulary,
    Vocabulary,
    VocabularyError,
)


class ManyLangsCharsVocabulary(UnicodeCharsVocabulary):
    """A vocabulary whose char rows are an ELMoForManyLangs model's ids.

    A token's row, as upstream's ``read_list`` + ``create_one_batch``
    make it (the fixture README's sections 1-3): the token cut to
    ``MC - 2`` code points; ``[<eow>, c_1 .. c_k, <bow>, <pad> ...]``
    (upstream's swapped markers, ``<oov>`` for a character not in
    ``char.dic``), or ``[<eow>, <bos>|<eos>, <bow>, <pad> ...]`` for the
    (cut) token ``<bos>``/``<eos>``; then ``word.dic``'s id of the cut
    token (``<oov>`` if absent).

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
        self.bos_chars = self._row("<bos>")
        self.eos_chars = self._row("<eos>")
        self._word_char_ids = np.stack(
            [self._row(w) for w in self._id_to_word]
        ) if self._id_to_word else np.zeros(
            (0, self._max_characters_per_token), np.int32)
        if self._bos >= 0:
            self._word_char_ids[self._bos] = self.bos_chars
        if self._eos >= 0:
            self._word_char_ids[self._eos] = self.eos_chars

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
            filename, read_char_dic(char_dic),
            None if word_dic is None else read_word_dic(word_dic),
            max_characters_per_token, **kwargs,
        )

    def _row(self, token: str) -> np.ndarray:
        """Upstream's unshifted ids of one token: `(W,)` int32."""
        return upstream_token_ids(token, self.char_dic, self.word_dic,
                                  self.chars_per_token).astype(np.int32)

    def word_to_char_ids(self, word: str) -> np.ndarray:
        idx = self._word_to_id.get(word)
        if idx is not None:
            return self._word_char_ids[idx]
        # the bilm-tf boundary tokens are upstream's <bos>/<eos>
        if word == BOS_TOKEN:
            return self.bos_chars
        if word == EOS_TOKEN:
            return self.eos_chars
        return self._row(word)
