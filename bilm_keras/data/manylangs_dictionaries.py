"""ELMoForManyLangs' ``char.dic`` and ``word.dic``, read as upstream reads them.

Each line is ``token<TAB>id``. Upstream (``elmoformanylangs/elmo.py``,
``Embedder.get_model``) reads the file with ``codecs.open(..., 'utf-8')``
and, per line, ``line.strip().split('\\t')``. Its quirks are kept here,
because the released models' ids depend on them:

* a line with one field after ``strip()`` is the token ``'\\u3000'``
  (IDEOGRAPHIC SPACE) with that id. ``strip()`` removed the whitespace
  token itself, e.g. ``" \\t60"`` -> ``'\\u3000'`` -> 60. ``' '`` is then
  not in the dictionary, and becomes ``<oov>``.
* a token that appears twice keeps its later id.
* ids are parsed with ``int()``.
* lines are split as ``codecs`` splits them, also at U+0085, U+2028, ...

What upstream would fail on later is an error here. That is an embedding
table whose rows do not match, or a ``KeyError`` for ``<oov>``. The error
names the file, the line or the field, what was expected and what was
found. Every line must be ``token<TAB>id``, and the ids must be
``0 .. n-1``, each once. The special tokens that upstream looks up must be
present.
"""

from __future__ import annotations

import codecs
import os
from typing import Dict, Optional, Sequence, Tuple

#: the special tokens upstream looks up in char.dic (``create_one_batch``)
CHAR_SPECIALS = ("<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>")
#: the special tokens upstream looks up in word.dic
WORD_SPECIALS = ("<oov>", "<bos>", "<eos>", "<pad>")

#: the token upstream gives a line whose token ``strip()`` removed
STRIPPED_TOKEN = "\u3000"


class ManyLangsDictionaryError(ValueError):
    """A ``char.dic`` / ``word.dic`` that upstream could not use as a
    dictionary of ids ``0 .. n-1``."""


def read_manylangs_dictionary(
    path: str | os.PathLike, *, required: Sequence[str] = ()
) -> Dict[str, int]:
    """Reads an ELMoForManyLangs dictionary file as upstream does.

    Args:
        path: ``char.dic`` or ``word.dic`` (UTF-8, ``token<TAB>id`` lines).
        required: tokens that must be in the dictionary.

    Returns:
        ``{token: id}`` in file order (a later duplicate keeps the first
        one's place and takes its id), ids exactly ``0 .. len - 1``.

    Raises:
        ManyLangsDictionaryError: a line that is not ``token<TAB>id``, ids
            that are not ``0 .. n-1`` each once, a missing required token,
            or a file that cannot be read as UTF-8.
    """
    path = os.fspath(path)
    lexicon: Dict[str, int] = {}
    lines_of: Dict[str, int] = {}
    try:
        with codecs.open(path, "r", encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                fields = line.strip().split("\t")
                if len(fields) == 1:
                    fields.insert(0, STRIPPED_TOKEN)
                try:
                    if len(fields) != 2:
                        raise ValueError
                    token, index = fields[0], int(fields[1])
                except ValueError:
                    raise ManyLangsDictionaryError(
                        f"{path}: line {lineno}: expected 'token<TAB>id' "
                        f"(one tab, an integer id), found {line!r}"
                    ) from None
                lexicon[token] = index
                lines_of[token] = lineno
    except FileNotFoundError:
        raise ManyLangsDictionaryError(
            f"{path}: dictionary file not found") from None
    except UnicodeDecodeError as e:
        raise ManyLangsDictionaryError(
            f"{path}: expected UTF-8 text, found byte "
            f"{e.object[e.start:e.start + 1]!r} at offset {e.start}"
        ) from None
    _check_ids(path, lexicon, lines_of)
    missing = [token for token in required if token not in lexicon]
    if missing:
        raise ManyLangsDictionaryError(
            f"{path}: expected the special tokens {' '.join(required)}; "
            f"missing: {' '.join(missing)}"
        )
    return lexicon


def _check_ids(path: str, lexicon: Dict[str, int],
               lines_of: Dict[str, int]) -> None:
    """Ids ``0 .. n-1``, each once: row ``id`` of the model's table is
    that token's, and the table has exactly ``n`` rows."""
    n = len(lexicon)
    owner: Dict[int, str] = {}
    for token, index in lexicon.items():
        if not 0 <= index < n:
            raise ManyLangsDictionaryError(
                f"{path}: line {lines_of[token]}: expected ids 0..{n - 1} "
                f"({n} distinct tokens), found id {index} for {token!r}"
            )
        if index in owner:
            other = owner[index]
            raise ManyLangsDictionaryError(
                f"{path}: line {lines_of[token]}: expected distinct ids "
                f"0..{n - 1}, found id {index} for both {other!r} "
                f"(line {lines_of[other]}) and {token!r}"
            )
        owner[index] = token


def read_char_dic(path: str | os.PathLike) -> Dict[str, int]:
    """``char.dic``: :func:`read_manylangs_dictionary` with upstream's
    char specials (:data:`CHAR_SPECIALS`) required."""
    return read_manylangs_dictionary(path, required=CHAR_SPECIALS)


def read_word_dic(path: str | os.PathLike) -> Dict[str, int]:
    """``word.dic``: :func:`read_manylangs_dictionary` with upstream's
    word specials (:data:`WORD_SPECIALS`) required."""
    return read_manylangs_dictionary(path, required=WORD_SPECIALS)


def read_dictionaries(
    char_dic: str | os.PathLike, word_dic: Optional[str | os.PathLike],
) -> Tuple[Dict[str, int], Optional[Dict[str, int]]]:
    """A model's ``char.dic`` and ``word.dic`` (None, and None returned,
    for a model without a word part), as every ``from_files`` reads them.
    """
    return (read_char_dic(char_dic),
            None if word_dic is None else read_word_dic(word_dic))
