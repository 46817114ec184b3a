"""Tokens far longer than a word: text not segmented as the model's was.

A model reads words. An unsegmented line, such as Chinese written without
spaces (``今天天氣真好``), reaches it as one long "word". The batcher cuts
it to the model's characters per token without an error, and the vectors
are silently wrong.

* :func:`long_token_limit` says how long a token of the model's text can
  plausibly be.
* :func:`first_long_token` finds the first token past it.
* :func:`long_token_message` is the one warning line, naming the line and
  the segmentation the model expects.

The facade, ``bilm-keras embed`` and the SavedModel warn once per call or
run with it, never per line.

A word-input model, such as the converted Paddle baike model, looks a
whole token up in its vocabulary. An unsegmented line is one unknown word,
``<UNK>``, and it is warned of the same way.

The limit is in the unit the model's ids count. That is UTF-8 bytes for
bilm-tf's char ids, and characters for a converted ELMoForManyLangs model
and for a word-input model's vocabulary. It is:

* with the model's vocabulary (a ManyLangs model's ``word.dic``), twice
  the length of its 999th word in 1,000 by length. This holds when that is
  shorter than what the model reads. A traditional-Chinese vocabulary's
  words are a few characters, and a sentence is dozens.
* for a word-input model, the same, from its vocabulary file, however
  long. It cuts nothing.
* else what the model reads of a token, ``max_characters_per_token - 2``,
  since the word's begin and end marks take the other two. Past it the
  token is cut.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from typing import Iterable, Optional, Sequence

#: the units a model's ids count a token in
UNITS = ("bytes", "characters")

#: what the warning shows of a long token
_SHOWN = 24


@dataclasses.dataclass(frozen=True)
class LongTokenLimit:
    """The longest token a model's text plausibly holds.

    Args:
        length: that length, in ``unit``.
        unit: ``"bytes"`` (UTF-8, bilm-tf's char ids) or ``"characters"``
            (a converted ELMoForManyLangs model).
        read: what the model reads of a token, in ``unit``. The rest is
            cut. None for a word-input model, which looks the whole token
            up in its vocabulary.
        basis: why ``length``, in words, for the warning.
    """

    length: int
    unit: str
    read: Optional[int]
    basis: str

    def length_of(self, token: str) -> int:
        """``token``'s length in :attr:`unit`."""
        if self.unit == "bytes":
            return len(token.encode("utf-8", "ignore"))
        return len(token)


@dataclasses.dataclass(frozen=True)
class LongToken:
    """The first token past a :class:`LongTokenLimit`: its sentence
    (0-based index in the input), the token and its length."""

    sentence: int
    token: str
    length: int


def long_token_limit(max_characters_per_token: Optional[int], *,
                     unit: str, words: Optional[Iterable[str]] = None
                     ) -> Optional[LongTokenLimit]:
    """The limit for a model (module docstring).

    Args:
        max_characters_per_token: the options', the model's ids' width
            without a ManyLangs word column. None for a word-input model.
            Then the limit comes from ``words`` alone, and there is none
            without them.
        unit: ``"bytes"`` or ``"characters"``, what the ids count.
        words: the model's vocabulary, when it has one.
    """
    if unit not in UNITS:
        raise ValueError(f"unit: expected one of {UNITS}, found {unit!r}")
    if max_characters_per_token is None:
        read, limit = None, None
    else:
        read = max_characters_per_token - 2
        limit = LongTokenLimit(
            read, unit, read, f"the {read} {unit} the model reads of a token")
    probe = LongTokenLimit(0, unit, read, "")
    lengths = sorted(probe.length_of(w) for w in words or ())
    if lengths:
        typical = lengths[(len(lengths) - 1) * 999 // 1000]
        if 0 < 2 * typical and (read is None or 2 * typical < read):
            limit = LongTokenLimit(
                2 * typical, unit, read,
                f"twice the length of 999 in 1,000 of the model's "
                f"{len(lengths):,} words ({typical} {unit})")
    return limit


def first_long_token(sentences: Iterable[Sequence[str]],
                     limit: LongTokenLimit,
                     start: int = 0) -> Optional[LongToken]:
    """The first token of ``sentences`` longer than ``limit`` (sentences
    numbered from ``start``), or None. Tokens that are not strings are
    left to the batcher's own check."""
    for number, sentence in enumerate(sentences, start):
        if isinstance(sentence, str):
            return None  # not token lists: the batcher's error
        for token in sentence:
            if isinstance(token, str) \
                    and limit.length_of(token) > limit.length:
                return LongToken(number, token, limit.length_of(token))
    return None


def long_token_message(found: LongToken, limit: LongTokenLimit,
                       where: str) -> str:
    """The warning: ``where`` names the input (``"sentences[12]"``,
    ``"text.txt, line 13"``)."""
    shown = (found.token if len(found.token) <= _SHOWN
             else found.token[:_SHOWN] + "...")
    return (f"{where}: a token of {found.length} {limit.unit} ({shown!r}), "
            f"longer than {limit.basis}: is the text segmented into words "
            f"as the model's vocabulary was? The model expects "
            f"whitespace-separated words (Chinese: '今天 天氣 真好', not "
            f"'今天天氣真好'); {_what_the_model_does(limit)} (warned once, "
            f"for the first such token)")


def _what_the_model_does(limit: LongTokenLimit) -> str:
    if limit.read is None:
        return ("it looks the whole token up in its vocabulary, where "
                "this one is <UNK>")
    return (f"it reads the first {limit.read} {limit.unit} of a token and "
            f"cuts the rest")


def warn_of_long_tokens(sentences, limit: Optional[LongTokenLimit], warn):
    """``sentences`` as they are, ``warn(message)`` called once for the
    first long token: at once for a sequence, when it is reached for any
    other iterable (read once, lazily, as given). No limit: unchanged."""
    if limit is None:
        return sentences
    if isinstance(sentences, Sequence):
        if not isinstance(sentences, str):
            _warn_first(sentences, limit, warn, 0)
        return sentences
    try:
        iterator = iter(sentences)
    except TypeError:
        return sentences  # the embedder's own error
    return _checked(iterator, limit, warn)


def _warn_first(sentences, limit, warn, start) -> bool:
    found = first_long_token(sentences, limit, start)
    if found is not None:
        warn(long_token_message(found, limit, f"sentences[{found.sentence}]"))
    return found is not None


def _checked(iterator, limit, warn):
    number, warned = 0, False
    for sentence in iterator:
        if not warned:
            warned = _warn_first([sentence], limit, warn, number)
        number += 1
        yield sentence


def first_long_token_in_lines(lines: Iterable[str],
                              limit: LongTokenLimit) -> Optional[LongToken]:
    """:func:`first_long_token` of a text's lines, whitespace-tokenized as
    ``embed`` reads them (``sentence`` is the 0-based line number)."""
    return first_long_token((line.split() for line in lines), limit)


#: the lines of a sentence file :func:`long_token_warning_for_file` reads
#: (its first ones: an unsegmented file shows it at once)
LINES_CHECKED = 100_000


def long_token_warning_for_file(
        dataset_file: str | os.PathLike, options_file: str | os.PathLike,
        vocab_file: Optional[str | os.PathLike] = None) -> Optional[str]:
    """The warning for a sentence file and a model's options, or None
    when no line has a long token.

    The file is ``bilm-keras embed``'s input, one whitespace-tokenized
    sentence a line. A word-input model's vocabulary is needed too. The
    warning names the first of the file's first :data:`LINES_CHECKED`
    lines with a long token."""
    from bilm_keras.data.batcher_for_options import batcher_for_options
    from bilm_keras.options import BiLMOptions

    limit = limit_for_batcher(batcher_for_options(
        BiLMOptions.from_json(options_file), vocab_file))
    if limit is None:
        return None
    with open(dataset_file, encoding="utf-8", errors="replace") as f:
        found = first_long_token_in_lines(
            itertools.islice(f, LINES_CHECKED), limit)
    if found is None:
        return None
    return long_token_message(
        found, limit, f"{os.fspath(dataset_file)}, line {found.sentence + 1}")


def limit_for_batcher(batcher) -> Optional[LongTokenLimit]:
    """The limit of the model whose ids ``batcher`` makes: a
    :class:`~bilm_keras.data.batcher.Batcher` (bytes, no vocabulary
    needed), a :class:`~bilm_keras.data.manylangs_batcher.
    ManyLangsBatcher` (characters, its ``word.dic``), a
    :class:`~bilm_keras.data.batcher.TokenBatcher` (characters, its
    vocabulary: a word-input model)."""
    from bilm_keras.data.batcher import Batcher, TokenBatcher
    from bilm_keras.data.manylangs_batcher import ManyLangsBatcher

    if isinstance(batcher, ManyLangsBatcher):
        return long_token_limit(batcher.chars_per_token, unit="characters",
                                words=batcher.word_dic)
    if isinstance(batcher, Batcher):
        return long_token_limit(batcher.max_characters_per_token,
                                unit="bytes")
    if isinstance(batcher, TokenBatcher):
        return long_token_limit(None, unit="characters",
                                words=batcher.words)
    return None
