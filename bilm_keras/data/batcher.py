"""Turn tokenized sentences into the id arrays the biLM consumes.

Both batchers add ``<S>``/``</S>`` around every sentence and shift every id
by +1 so that 0 marks padding: a row's length is its number of non-zero
positions. Shapes:

* :class:`Batcher` -> ``(n_sentences, max_len + 2, max_characters)``
* :class:`TokenBatcher` -> ``(n_sentences, max_len + 2)``
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence

import numpy as np

from bilm_keras._utils.problem_list import name_list
from bilm_keras.data.vocabulary import (
    BOS_TOKEN,
    EOS_TOKEN,
    UnicodeCharsVocabulary,
    Vocabulary,
    VocabularyError,
)


def check_sentences(sentences) -> None:
    """Raise a clear error for input the batchers cannot encode.

    A batch of zero sentences is an error, since there is nothing to pad
    to. A sentence with zero tokens is fine: it becomes ``<S> </S>``.
    """
    if isinstance(sentences, str) or not isinstance(sentences, Sequence):
        raise TypeError(
            "sentences: expected a list of token lists, found "
            f"{type(sentences).__name__}"
        )
    if len(sentences) == 0:
        raise ValueError("sentences: expected at least one sentence, found 0")
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, str) or not isinstance(sentence, Sequence):
            raise TypeError(
                f"sentences[{i}]: expected a list of tokens, found "
                f"{type(sentence).__name__} {sentence!r:.60}"
            )
        for j, token in enumerate(sentence):
            if not isinstance(token, str):
                raise TypeError(
                    f"sentences[{i}][{j}]: expected a str token, found "
                    f"{type(token).__name__} {token!r:.60}"
                )


def batch_char_rows(sentences: List[List[str]], width: int,
                    sentence_rows: Callable[[List[str]], np.ndarray]
                    ) -> np.ndarray:
    """The char batchers' array (:class:`Batcher`'s and
    ``ManyLangsBatcher``'s), after :func:`check_sentences`.

    Args:
        width: ids per token, the last axis.
        sentence_rows: a sentence's unshifted ids, boundaries included:
            `(n_tokens + 2, width)`.

    Returns:
        `(n_sentences, max_len + 2, width)` int64: each sentence's rows
        + 1, then 0 (padding) past its end.
    """
    check_sentences(sentences)
    max_length = max(len(s) for s in sentences) + 2
    x = np.zeros((len(sentences), max_length, width), dtype=np.int64)
    for k, sentence in enumerate(sentences):
        # +1 so that 0 is the mask value
        x[k, : len(sentence) + 2] = sentence_rows(sentence) + 1
    return x


class Batcher:
    """Char ids for sentences, exactly as bilm-tf's ``Batcher``.

    Args:
        lm_vocab_file: vocabulary file. It caches char ids and maps literal
            ``<S>``/``</S>`` tokens to the boundary characters, as in
            bilm-tf. With None there is no file, and every token is spelled
            out from its bytes.
        max_characters_per_token: characters per token, the options' value.
            Longer tokens keep their first ``max_characters_per_token - 2``
            UTF-8 bytes.

    Example:
        >>> batcher = Batcher("vocab.txt", 50)
        >>> batcher.batch_sentences([["Hello", "world"]]).shape
        (1, 4, 50)
    """

    def __init__(self, lm_vocab_file: Optional[str],
                 max_characters_per_token: int):
        self._lm_vocab = UnicodeCharsVocabulary(
            lm_vocab_file, max_characters_per_token
        )
        self._max_characters_per_token = max_characters_per_token

    @property
    def max_characters_per_token(self) -> int:
        return self._max_characters_per_token

    def batch_sentences(self, sentences: List[List[str]]) -> np.ndarray:
        """``(n_sentences, max_len + 2, max_characters_per_token)`` int64
        char ids."""
        return batch_char_rows(
            sentences, self._max_characters_per_token,
            lambda sentence: self._lm_vocab.encode_chars(sentence,
                                                         split=False))


class TokenBatcher:
    """Token ids for sentences, as bilm-tf's ``TokenBatcher``.

    Args:
        lm_vocab_file: vocabulary file, one token per line, line ``i``
            being id ``i``. It must contain ``<S>`` and ``</S>``, which is
            checked. ``<UNK>`` is optional. With it, tokens not in the file
            get its id, as in bilm-tf. Without it, every token must be in
            the file, and one that is not raises :class:`VocabularyError`
            naming it. That is the vocabulary bilm-tf's ``usage_token.py``
            writes: ``<S>``, ``</S>`` and the dataset's tokens. bilm-tf
            gave such a token id 0, the padding, which silently changed the
            sentence's vectors.

    Example:
        >>> batcher = TokenBatcher("vocab_small.txt")
        >>> batcher.batch_sentences([["Hello", "world"]]).shape
        (1, 4)
    """

    def __init__(self, lm_vocab_file: str):
        self._lm_vocab = Vocabulary(lm_vocab_file)
        missing = [
            tok for tok, idx in ((BOS_TOKEN, self._lm_vocab.bos),
                                 (EOS_TOKEN, self._lm_vocab.eos))
            if idx == -1
        ]
        if missing:
            raise VocabularyError(
                f"{self._lm_vocab.filename}: a token-input vocabulary must "
                f"contain the special tokens <S> and </S> (<UNK> is "
                f"optional); missing: {', '.join(missing)}"
            )

    @property
    def vocabulary_size(self) -> int:
        """Tokens of the vocabulary file: rows of its token table."""
        return self._lm_vocab.size

    @property
    def words(self) -> List[str]:
        """The vocabulary's tokens in id order."""
        return [self._lm_vocab.id_to_word(i)
                for i in range(self._lm_vocab.size)]

    def batch_sentences(self, sentences: List[List[str]]) -> np.ndarray:
        """``(n_sentences, max_len + 2)`` int64 token ids.

        Raises:
            VocabularyError: the vocabulary has no ``<UNK>`` and a token is
                not in it (the token, the file and ``sentences[i][j]``
                named).
        """
        check_sentences(sentences)
        max_length = max(len(s) for s in sentences) + 2
        x = np.zeros((len(sentences), max_length), dtype=np.int64)
        for k, sentence in enumerate(sentences):
            ids = self._lm_vocab.encode(sentence, split=False)
            if ids.min() < 0:  # only without <UNK>: -1 would become padding
                self.check_in_vocabulary(sentences)
            # +1 so that 0 is the mask value
            x[k, : len(sentence) + 2] = ids + 1
        return x

    def check_in_vocabulary(self, sentences: List[List[str]]) -> None:
        """Raises if a token cannot be mapped to an id.

        Only a vocabulary without ``<UNK>`` can fail: every token must then
        be in it.

        Args:
            sentences: list of token lists.

        Raises:
            VocabularyError: naming the file, the first missing token and
                its ``sentences[i][j]``, and how many others are missing.
        """
        vocab = self._lm_vocab
        if vocab.unk >= 0:
            return
        first, missing = None, {}
        for i, sentence in enumerate(sentences):
            for j, token in enumerate(sentence):
                if vocab.word_to_id(token) < 0:
                    first = first or (token, i, j)
                    missing.setdefault(token, None)
        if first is None:
            return
        token, i, j = first
        others = [t for t in missing if t != token]
        more = ""
        if others:
            shown = name_list([repr(t) for t in others], most=5)
            more = (f" ({len(others)} other missing token"
                    f"{'s' if len(others) > 1 else ''}: {shown})")
        raise VocabularyError(
            f"{vocab.filename}: token {token!r} (sentences[{i}][{j}]) is not "
            f"in the vocabulary, which has no <UNK> to map it to; add it or "
            f"<UNK>{more}"
        )
