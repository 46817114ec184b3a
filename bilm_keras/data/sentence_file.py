"""A text file of sentences to embed: one whitespace-tokenized sentence per
line, UTF-8.

Reading it needs no TensorFlow, so the ``bilm-keras embed`` command checks
its input (missing, not UTF-8, empty) before it loads anything.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Iterator

from bilm_keras.data.utf8_lines import read_utf8_lines


#: what a sentence file is, in the messages of every reader of one
SENTENCE_FILE_EXPECTED = ("a text file, one whitespace-tokenized sentence "
                          "per line")


class SentenceFileError(ValueError):
    """A sentence file that cannot be embedded (the message names the file
    and, for bad bytes, the line)."""


@dataclasses.dataclass(frozen=True)
class SentenceFileStats:
    """What :func:`check_sentence_file` counted.

    Attributes:
        n_lines: sentences, one a line. A blank line is a sentence of 0
            tokens.
        n_tokens: whitespace-separated tokens in all lines.
        n_blank_lines: lines without a token.
    """

    n_lines: int
    n_tokens: int
    n_blank_lines: int


def read_sentence_lines(path: str | os.PathLike) -> Iterator[str]:
    """Yields each line of ``path``, decoded (``\\n`` not removed).

    A UTF-8 byte-order mark at the start is dropped.

    Raises:
        SentenceFileError: the file is missing, a directory, unreadable, or
            a line is not valid UTF-8 (file, line and byte named).
    """
    for _, line in read_utf8_lines(path, error=SentenceFileError,
                                   expected=SENTENCE_FILE_EXPECTED):
        yield line


def check_sentence_file(path: str | os.PathLike, *,
                        sentence_keys: bool = False) -> SentenceFileStats:
    """Reads ``path`` once and counts its sentences and tokens.

    Args:
        sentence_keys: also check that each line's stripped text can name
            its own HDF5 dataset, as AllenNLP's ``--use-sentence-keys``
            does. So there is no blank line and no two lines alike. There
            is no ``/``, HDF5's group separator, and no NUL character,
            which would cut the name. No line is ``.``, the file's root
            group.

    Raises:
        SentenceFileError: as :func:`read_sentence_lines`. Also a file
            with no token at all, empty or of blank lines only. With
            ``sentence_keys``, also a line that cannot be a key. The error
            names the file, the line or both lines of a repeat, and the
            text.
    """
    n_lines = n_tokens = n_blank = 0
    first_line = {}  # with sentence_keys: text -> its 1-based line number
    for line in read_sentence_lines(path):
        n = len(line.split())
        n_lines += 1
        n_tokens += n
        n_blank += n == 0
        if sentence_keys:
            check_sentence_key(path, n_lines, line.strip(), first_line)
    check_not_empty(path, n_lines=n_lines, n_tokens=n_tokens)
    return SentenceFileStats(n_lines=n_lines, n_tokens=n_tokens,
                             n_blank_lines=n_blank)


def check_not_empty(path, *, n_lines: int, n_tokens: int) -> None:
    """The sentences of ``path`` (``n_lines`` lines, ``n_tokens`` tokens in
    all) hold a token.

    Raises:
        SentenceFileError: no token at all (empty, or blank lines only).
    """
    if n_tokens == 0:
        found = ("0 lines" if n_lines == 0
                 else f"{n_lines} line{'s' * (n_lines > 1)}, all blank")
        raise SentenceFileError(
            f"{os.fspath(path)}: empty input (expected one "
            f"whitespace-tokenized sentence per line, found {found})")


def check_sentence_key(path, line_number: int, text: str,
                       first_line: dict) -> None:
    """``text`` (line ``line_number`` of ``path``) can name a dataset of
    its own, and is not in ``first_line`` (text -> its line number, the
    lines seen so far: updated here).

    Raises:
        SentenceFileError: as :func:`check_sentence_file` with
            ``sentence_keys``.
    """
    where = f"{os.fspath(path)}, line {line_number}"
    rule = ("with sentence keys each dataset is named by its line's text; "
            "embed without them to name datasets by line number")
    if not text:
        raise SentenceFileError(
            f"{where}: blank, expected a sentence ({rule})")
    for char, why in (("/", "HDF5's group separator"),
                      ("\0", "it would cut the name")):
        if char in text:
            raise SentenceFileError(
                f"{where}: {text!r} contains {char!r} ({why}), expected "
                f"no {char!r} ({rule})")
    if text == ".":
        raise SentenceFileError(
            f"{where}: '.' names the file's root group in HDF5, expected "
            f"another text ({rule})")
    if text in first_line:
        raise SentenceFileError(
            f"{os.fspath(path)}, lines {first_line[text]} and "
            f"{line_number}: the same sentence {text!r}, expected distinct "
            f"sentences ({rule})")
    first_line[text] = line_number
