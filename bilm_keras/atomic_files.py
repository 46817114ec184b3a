"""Write a file completely or not at all.

Every file bilm_keras writes (HDF5 weights and embeddings, options.json,
vocabularies, corpus shards) goes to a temporary file beside its target and
is renamed onto it only when complete, so an interrupted or failed write
never leaves a half-written file, and an existing file stays as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Iterator


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """Yields a temporary path beside ``path`` to write to.

    On a normal exit the temporary file replaces ``path`` (``os.replace``);
    on an exception it is removed. Its name, ``<name>.tmp-XXXX.tmp``, shows
    what it was for should a killed process leave one behind.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        dir=folder, prefix=os.path.basename(path) + ".tmp-", suffix=".tmp"
    )
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Writes UTF-8 ``text`` (``\\n`` line ends) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
