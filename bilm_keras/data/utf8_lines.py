"""Reading a UTF-8 text file line by line, with errors that name the file,
the line and the bad bytes.

Every text input goes through :func:`read_utf8_lines`. That is the
training corpus and the vocabulary builder (:mod:`bilm_keras.data.corpus`)
and the sentences to embed (:mod:`bilm_keras.data.sentence_file`). A
reader of another file system, as ``embed --runner``'s, decodes each line
with :func:`decode_line`, so the message is the same. No TensorFlow.
"""

from __future__ import annotations

import os
from typing import Iterator, Type


UTF8_HINT = "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)"


def decode_line(raw: bytes, *, path: str, line_number: int, first: bool,
                error: Type[Exception] = ValueError,
                hint: str = UTF8_HINT) -> str:
    """``raw``, line ``line_number`` of ``path``, decoded from UTF-8 (a
    byte-order mark dropped when it is the file's ``first`` line).

    Raises:
        error: the line is not valid UTF-8 (file, line, byte offset and
            nearby bytes named, then ``hint``).
    """
    try:
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as e:
        near = raw[max(e.start - 8, 0): e.end + 8]
        raise error(
            f"{path}, line {line_number}: not valid UTF-8 at byte "
            f"{e.start} of the line ({e.reason}; near {near!r}); "
            f"{hint}") from None


def read_utf8_lines(
    path: str | os.PathLike,
    *,
    error: Type[Exception] = ValueError,
    expected: str = "a UTF-8 text file",
    hint: str = UTF8_HINT,
) -> Iterator[tuple]:
    """Yields ``(line_number, line)`` of ``path``, 1-based, decoded
    (``\\n`` not removed). A UTF-8 byte-order mark at the start is dropped.

    Args:
        path: the file.
        error: the exception type raised for a bad file (the caller's own,
            e.g. ``CorpusError``).
        expected: what the file should be, for the message of a missing
            file or a directory.
        hint: the fix, for the message of a line that is not UTF-8.

    Raises:
        error: the file is missing, a directory or unreadable, or a line is
            not valid UTF-8 (file, line, byte offset and nearby bytes
            named).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise error(f"{path}: is a directory (expected {expected})")
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise error(f"{path}: no such file (expected {expected})") from None
    except OSError as e:
        raise error(f"{path}: cannot open ({e.strerror})") from None
    with f:
        for lineno, raw in enumerate(f, 1):
            yield lineno, decode_line(raw, path=path, line_number=lineno,
                                      first=lineno == 1, error=error,
                                      hint=hint)
