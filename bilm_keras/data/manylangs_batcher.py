"""Turn tokenized sentences into a converted ELMoForManyLangs model's ids.

:class:`ManyLangsBatcher` has :class:`~bilm_keras.Batcher`'s interface, so
:class:`~bilm_keras.embedding.bulk_embedder.BulkEmbedder`,
:class:`~bilm_keras.BidirectionalLanguageModel` and the embedding dumps use
it unchanged (:func:`~bilm_keras.data.batcher_for_options.batcher_for_options`
picks it from the options). Its ids are upstream's
(``elmoformanylangs/frontend.py`` ``create_one_batch``, the fixture
README's sections 1-3 and 8), each +1 so that 0 marks padding.
"""

from __future__ import annotations

import os
from typing import Dict, List, Mapping, Optional

import numpy as np

from bilm_keras.data.batcher import batch_char_rows
from bilm_keras.data.manylangs_dictionaries import (
    CHAR_SPECIALS,
    WORD_SPECIALS,
    read_char_dic,
    read_dictionaries,
    read_word_dic,
)

#: upstream's sentence boundaries: tokens with their own char rows
BOS, EOS = "<bos>", "<eos>"


class ManyLangsBatcher:
    """Char (and word) ids for sentences, as ELMoForManyLangs computes them.

    Each sentence becomes ``<bos>``, its tokens, ``<eos>``. A token keeps
    its first ``max_characters_per_token - 2`` code points, a non-BMP
    character such as an emoji being one. That cut string is looked up in
    both dictionaries. Its char row (``MC = max_characters_per_token``
    columns) is, in upstream's ids::

        [<eow>, c_1 ... c_k, <bow>, <pad> ...]     # a token of k chars
        [<eow>, <bos>|<eos>, <bow>, <pad> ...]     # the token <bos>/<eos>

    Upstream swaps the two markers (its ``bow_id`` reads ``'<eow>'``), and
    its released models were trained so. A character not in ``char.dic``
    is ``<oov>``. With a word part, one more column holds
    ``word.dic``'s id of the token, ``<oov>`` if absent. Literal
    ``<bos>``/``<eos>`` tokens get the boundaries' rows, as upstream.

    Args:
        char_dic: ``{char: id}`` (as :func:`read_char_dic` returns it) or
            the path of ``char.dic``.
        word_dic: ``{word: id}`` or the path of ``word.dic``. None for a
            model without a word part.
        max_characters_per_token: the options' ``MC`` (at least 7: the
            ``<bos>`` row).

    Example:
        >>> batcher = ManyLangsBatcher("char.dic", "word.dic", 50)
        >>> batcher.batch_sentences([["今天", "天气", "很好"]]).shape
        (1, 5, 51)
    """

    def __init__(
        self,
        char_dic: Mapping[str, int] | str | os.PathLike,
        word_dic: Optional[Mapping[str, int] | str | os.PathLike],
        max_characters_per_token: int,
    ):
        if isinstance(char_dic, (str, os.PathLike)):
            char_dic = read_char_dic(char_dic)
        if isinstance(word_dic, (str, os.PathLike)):
            word_dic = read_word_dic(word_dic)
        if (isinstance(max_characters_per_token, bool)
                or not isinstance(max_characters_per_token, int)
                or max_characters_per_token < 7):
            raise ValueError(
                "max_characters_per_token: expected an integer >= 7 "
                "(upstream asserts len('<bos>') + 2 <= "
                f"max_characters_per_token), found {max_characters_per_token!r}"
            )
        _check_specials("char_dic", char_dic, CHAR_SPECIALS)
        if word_dic is not None:
            _check_specials("word_dic", word_dic, WORD_SPECIALS)
        self.char_dic = dict(char_dic)
        self.word_dic = None if word_dic is None else dict(word_dic)
        self.chars_per_token = max_characters_per_token
        self._rows: Dict[str, np.ndarray] = {}  # token -> (W,) ids

    @classmethod
    def from_files(
        cls,
        char_dic: str | os.PathLike,
        word_dic: Optional[str | os.PathLike],
        max_characters_per_token: int,
    ) -> "ManyLangsBatcher":
        """Reads ``char.dic`` (and ``word.dic`` unless None) as upstream
        does (:mod:`bilm_keras.data.manylangs_dictionaries`)."""
        return cls(*read_dictionaries(char_dic, word_dic),
                   max_characters_per_token)

    @property
    def has_word_part(self) -> bool:
        return self.word_dic is not None

    @property
    def max_characters_per_token(self) -> int:
        """Ids per token, the last axis of :meth:`batch_sentences`: ``MC``,
        + 1 for the word id (named as :class:`Batcher`'s)."""
        return self.chars_per_token + int(self.has_word_part)

    def token_ids(self, token: str) -> np.ndarray:
        """Upstream's ids of one token (no +1): `(W,)` int64, the char row
        then the word id (with a word part)."""
        return self._row(token).copy()

    def _row(self, token: str) -> np.ndarray:
        row = self._rows.get(token)
        if row is None:
            row = upstream_token_ids(
                token, self.char_dic, self.word_dic, self.chars_per_token)
            if len(self._rows) < 1_000_000:  # a bounded cache
                self._rows[token] = row
        return row

    def batch_sentences(self, sentences: List[List[str]]) -> np.ndarray:
        """``(n_sentences, max_len + 2, W)`` int64 ids, +1-shifted, 0 past
        each sentence's end. ``W = MC``, + 1 for the word id in the last
        column."""
        return batch_char_rows(
            sentences, self.max_characters_per_token,
            lambda sentence: np.stack(
                [self._row(token) for token in [BOS, *sentence, EOS]]))


def upstream_token_ids(token: str, char_dic: Mapping[str, int],
                       word_dic: Optional[Mapping[str, int]],
                       max_characters_per_token: int) -> np.ndarray:
    """Upstream's ids of one token, unshifted (``create_one_batch``): the
    char row, then the word id when there is a ``word_dic``.

    Returns:
        `(max_characters_per_token [+ 1],)` int64.
    """
    mc = max_characters_per_token
    chars = char_dic
    token = token[: mc - 2]  # code points; the word lookup sees the cut
    row = np.full([mc], chars["<pad>"], np.int64)
    row[0] = chars["<eow>"]  # upstream's swapped begin-of-word marker
    if token in (BOS, EOS):
        row[1:3] = chars[token], chars["<bow>"]
    else:
        oov = chars["<oov>"]
        row[1: len(token) + 1] = [chars.get(c, oov) for c in token]
        row[len(token) + 1] = chars["<bow>"]
    if word_dic is None:
        return row
    word = word_dic.get(token, word_dic["<oov>"])
    return np.append(row, np.int64(word))


def _check_specials(name: str, lexicon: Mapping[str, int],
                    specials) -> None:
    missing = [token for token in specials if token not in lexicon]
    if missing:
        raise ValueError(
            f"{name}: expected the special tokens {' '.join(specials)}, "
            f"missing: {' '.join(missing)}"
        )
