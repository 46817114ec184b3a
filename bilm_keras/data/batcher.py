"""Turn tokenized sentences into the id arrays the biLM consumes.

Both batchers add ``<S>``/``</S>`` around every sentence and shift every id
by +1 so that 0 marks padding: a row's length is its number of non-zero
positions. Shapes:

* :class:`Batcher` -> ``(n_sentences, max_len + 2, max_characters)``
* :class:`TokenBatcher` -> ``(n_sentences, max_len + 2)``
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from bilm_keras.data.vocabulary import UnicodeCharsVocabulary, Vocabulary


def check_sentences(sentences) -> None:
    """Raise a clear error for input the batchers cannot encode.

    A batch of zero sentences is an error (there is nothing to pad to); a
    sentence with zero tokens is fine (it becomes ``<S> </S>``).
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


class Batcher:
    """Char ids for sentences, exactly as bilm-tf's ``Batcher``.

    Args:
        lm_vocab_file: vocabulary file; it caches char ids and maps literal
            ``<S>``/``</S>`` tokens to the boundary characters, as in bilm-tf.
            None: no file (every token is spelled out from its bytes).
        max_token_length: characters per token (``max_characters_per_token``
            of the options); longer tokens keep their first
            ``max_token_length - 2`` UTF-8 bytes.

    Example:
        >>> batcher = Batcher("vocab.txt", 50)
        >>> batcher.batch_sentences([["Hello", "world"]]).shape
        (1, 4, 50)
    """

    def __init__(self, lm_vocab_file: Optional[str], max_token_length: int):
        self._lm_vocab = UnicodeCharsVocabulary(
            lm_vocab_file, max_token_length
        )
        self._max_token_length = max_token_length

    @property
    def max_token_length(self) -> int:
        return self._max_token_length

    def batch_sentences(self, sentences: List[List[str]]) -> np.ndarray:
        """``(n_sentences, max_len + 2, max_token_length)`` int64 char ids."""
        check_sentences(sentences)
        max_length = max(len(s) for s in sentences) + 2
        x = np.zeros(
            (len(sentences), max_length, self._max_token_length),
            dtype=np.int64,
        )
        for k, sentence in enumerate(sentences):
            char_ids = self._lm_vocab.encode_chars(sentence, split=False)
            # +1 so that 0 is the mask value
            x[k, : len(sentence) + 2, :] = char_ids + 1
        return x


class TokenBatcher:
    """Token ids for sentences, exactly as bilm-tf's ``TokenBatcher``.

    Out-of-vocabulary tokens get ``<UNK>``'s id, so the file must contain
    ``<S>``, ``</S>`` and ``<UNK>`` (checked).
    """

    def __init__(self, lm_vocab_file: str):
        self._lm_vocab = Vocabulary(lm_vocab_file, validate_file=True)

    def batch_sentences(self, sentences: List[List[str]]) -> np.ndarray:
        """``(n_sentences, max_len + 2)`` int64 token ids."""
        check_sentences(sentences)
        max_length = max(len(s) for s in sentences) + 2
        x = np.zeros((len(sentences), max_length), dtype=np.int64)
        for k, sentence in enumerate(sentences):
            ids = self._lm_vocab.encode(sentence, split=False)
            # +1 so that 0 is the mask value
            x[k, : len(sentence) + 2] = ids + 1
        return x

