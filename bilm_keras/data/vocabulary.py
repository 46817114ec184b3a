"""Vocabularies with bilm-tf's semantics.

Char ids, before the +1 mask shift that :class:`Batcher` applies:

* 0-255: the UTF-8 bytes of the token, truncated to
  ``max_characters_per_token - 2`` bytes. A multi-byte character may be cut.
* 256 / 257: begin / end of sentence, the ``<S>`` / ``</S>`` tokens.
* 258 / 259: begin / end of word, around every token's bytes.
* 260: padding inside a token's ``max_characters_per_token`` slots.
"""

from __future__ import annotations

import os
from typing import Iterable, List, Optional

import numpy as np

BOS_CHAR = 256
EOS_CHAR = 257
BOW_CHAR = 258
EOW_CHAR = 259
PAD_CHAR = 260

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"
UNK_TOKEN = "<UNK>"


class VocabularyError(ValueError):
    """A vocabulary file that cannot be used as asked."""


def _utf8_error(filename: str) -> str:
    """The message for a file that is not UTF-8: its first bad line."""
    with open(filename, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                return (f"{filename}: line {number}: expected UTF-8 text, "
                        f"found byte {raw[e.start:e.start + 1]!r} at "
                        f"column {e.start + 1} ({e.reason})")
    return f"{filename}: expected UTF-8 text"


class Vocabulary:
    """Token <-> id mapping read from a file with one token per line.

    Args:
        filename: the vocabulary file, UTF-8. Line ``i`` is token id ``i``.
            ``!!!MAXTERMID`` lines are skipped, as in bilm-tf. None gives
            an empty vocabulary.
        validate_file: require ``<S>``, ``</S>`` and ``<UNK>`` and name the
            missing ones.

    Unknown words map to ``<UNK>``'s id, -1 when the file has none.
    """

    def __init__(self, filename: Optional[str | os.PathLike],
                 validate_file=False):
        self.filename = None if filename is None else os.fspath(filename)
        self._id_to_word: List[str] = []
        self._word_to_id = {}
        self._unk = self._bos = self._eos = -1
        if self.filename is not None:
            self._read(self.filename)
        if validate_file:
            missing = [
                tok for tok, idx in ((BOS_TOKEN, self._bos),
                                     (EOS_TOKEN, self._eos),
                                     (UNK_TOKEN, self._unk))
                if idx == -1
            ]
            if missing:
                raise VocabularyError(
                    f"{self.filename}: the vocabulary must contain the "
                    f"special tokens <S>, </S> and <UNK>; missing: "
                    f"{', '.join(missing)}"
                )

    def _read(self, filename: str) -> None:
        try:
            f = open(filename, encoding="utf-8")
        except FileNotFoundError:
            raise VocabularyError(
                f"{filename}: vocabulary file not found"
            ) from None
        with f:
            try:
                self._read_lines(f)
            except UnicodeDecodeError:
                raise VocabularyError(_utf8_error(filename)) from None

    def _read_lines(self, f) -> None:
        for line in f:
            word = line.strip()
            if word == "!!!MAXTERMID":
                continue
            idx = len(self._id_to_word)
            if word == BOS_TOKEN:
                self._bos = idx
            elif word == EOS_TOKEN:
                self._eos = idx
            elif word == UNK_TOKEN:
                self._unk = idx
            self._id_to_word.append(word)
            self._word_to_id[word] = idx

    @property
    def bos(self) -> int:
        return self._bos

    @property
    def eos(self) -> int:
        return self._eos

    @property
    def unk(self) -> int:
        return self._unk

    @property
    def size(self) -> int:
        return len(self._id_to_word)

    def word_to_id(self, word: str) -> int:
        return self._word_to_id.get(word, self._unk)

    def id_to_word(self, cur_id: int) -> str:
        return self._id_to_word[cur_id]

    def decode(self, cur_ids: Iterable[int]) -> str:
        return " ".join(self.id_to_word(i) for i in cur_ids)

    def encode(self, sentence, reverse=False, split=True) -> np.ndarray:
        """Ids of ``<S> tokens </S>`` (``</S> tokens <S>`` when reversed).

        Args:
            sentence: a string (split on whitespace) or, with
                ``split=False``, a list of tokens.
        """
        words = sentence.split() if split else sentence
        ids = [self.word_to_id(w) for w in words]
        if reverse:
            return np.array([self.eos] + ids + [self.bos], dtype=np.int32)
        return np.array([self.bos] + ids + [self.eos], dtype=np.int32)


def word_to_char_ids(word: str, max_characters_per_token: int) -> np.ndarray:
    """``(max_characters_per_token,)`` char ids of one token, without the
    +1 shift."""
    code = np.full([max_characters_per_token], PAD_CHAR, dtype=np.int32)
    encoded = word.encode("utf-8", "ignore")[: max_characters_per_token - 2]
    code[0] = BOW_CHAR
    code[1: len(encoded) + 1] = np.frombuffer(encoded, dtype=np.uint8)
    code[len(encoded) + 1] = EOW_CHAR
    return code


def special_char_ids(char: int, max_characters_per_token: int) -> np.ndarray:
    """Char ids of the sentence-boundary pseudo tokens ``<S>``/``</S>``."""
    code = np.full([max_characters_per_token], PAD_CHAR, dtype=np.int32)
    code[:3] = (BOW_CHAR, char, EOW_CHAR)
    return code


class UnicodeCharsVocabulary(Vocabulary):
    """A :class:`Vocabulary` that also gives each token's char ids.

    Char ids come from the token's UTF-8 bytes, so any word in any language,
    in the vocabulary or not, has them. The vocabulary only caches them. As
    in bilm-tf, whose vocabularies always hold them, the literal tokens
    ``<S>`` and ``</S>`` get the sentence-boundary chars rather than their
    spelling. Here that holds with any file, or none.

    A subclass with other char ids, such as an ELMoForManyLangs model's,
    overrides :meth:`_token_char_ids` and builds its table with
    :meth:`_build_char_table`, giving its own boundary rows.
    """

    bos_char = BOS_CHAR
    eos_char = EOS_CHAR
    bow_char = BOW_CHAR
    eow_char = EOW_CHAR
    pad_char = PAD_CHAR

    def __init__(self, filename, max_characters_per_token: int, **kwargs):
        super().__init__(filename, **kwargs)
        if max_characters_per_token < 3:
            raise VocabularyError(
                f"max_characters_per_token: expected at least 3, found "
                f"{max_characters_per_token}"
            )
        self._max_characters_per_token = max_characters_per_token
        self._build_char_table(
            special_char_ids(BOS_CHAR, max_characters_per_token),
            special_char_ids(EOS_CHAR, max_characters_per_token))

    def _build_char_table(self, bos_chars: np.ndarray,
                          eos_chars: np.ndarray) -> None:
        """Caches every vocabulary token's char ids
        (:meth:`_token_char_ids`), ``<S>`` and ``</S>`` given the boundary
        rows ``bos_chars`` / ``eos_chars`` (each `(W,)`, W =
        :attr:`max_characters_per_token`)."""
        self.bos_chars, self.eos_chars = bos_chars, eos_chars
        self._word_char_ids = np.stack(
            [self._token_char_ids(w) for w in self._id_to_word]
        ) if self._id_to_word else np.zeros(
            (0, self._max_characters_per_token), np.int32)
        # bilm-tf wrote these rows unconditionally, so a file without <S>
        # overwrote the last word's row (index -1); we only do it when present.
        if self._bos >= 0:
            self._word_char_ids[self._bos] = self.bos_chars
        if self._eos >= 0:
            self._word_char_ids[self._eos] = self.eos_chars

    def _token_char_ids(self, word: str) -> np.ndarray:
        """The char ids of a token that is not a sentence boundary: `(W,)`
        int32, unshifted."""
        return word_to_char_ids(word, self._max_characters_per_token)

    @property
    def word_char_ids(self) -> np.ndarray:
        """``(size, max_characters_per_token)`` char ids of every vocabulary
        token."""
        return self._word_char_ids

    @property
    def max_characters_per_token(self) -> int:
        return self._max_characters_per_token

    def word_to_char_ids(self, word: str) -> np.ndarray:
        idx = self._word_to_id.get(word)
        if idx is not None:
            return self._word_char_ids[idx]
        # every bilm-tf vocabulary holds <S> and </S>, so these literal
        # tokens always mean the sentence boundaries (also without a file)
        if word == BOS_TOKEN:
            return self.bos_chars
        if word == EOS_TOKEN:
            return self.eos_chars
        return self._token_char_ids(word)

    def encode_chars(self, sentence, reverse=False, split=True) -> np.ndarray:
        """``(n_tokens + 2, max_characters_per_token)`` char ids with
        boundaries."""
        words = sentence.split() if split else sentence
        rows = [self.word_to_char_ids(w) for w in words]
        if reverse:
            return np.vstack([self.eos_chars] + rows + [self.bos_chars])
        return np.vstack([self.bos_chars] + rows + [self.eos_chars])
