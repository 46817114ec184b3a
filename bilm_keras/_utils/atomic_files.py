"""Write a file completely or not at all.

Every file bilm_keras writes (HDF5 weights and embeddings, options.json,
vocabularies, corpus shards) goes to a temporary file beside its target and
is renamed onto it only when complete, so an interrupted or failed write
never leaves a half-written file, and an existing file stays as it was.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from typing import Iterator


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """Yields a temporary path beside ``path`` to write to.

    On a normal exit the temporary file replaces ``path`` (``os.replace``);
    on an exception it is removed. It has the permissions of any new file
    (``0o666`` less the umask). Its name, ``<name>.tmp-XXXX.tmp``, shows
    what it was for should a killed process leave one behind.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    # created like any file (0o666 less the umask; mkstemp's would be
    # private), under a name no other writer has
    while True:
        tmp = os.path.join(folder, f"{os.path.basename(path)}.tmp-"
                                   f"{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                             0o666))
            break
        except FileExistsError:
            continue
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


class OutputDirectoryError(ValueError):
    """An output directory that must not be replaced."""


def check_output_directory(outdir: str | os.PathLike,
                           overwrite: bool) -> None:
    """Refuses a file, or a non-empty directory unless ``overwrite``."""
    outdir = os.fspath(outdir)
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise OutputDirectoryError(
            f"{outdir}: expected a directory to write, found a file")
    if os.path.isdir(outdir) and os.listdir(outdir) and not overwrite:
        raise OutputDirectoryError(
            f"{outdir}: expected a new or empty directory, found one with "
            "files (pass overwrite=True / --overwrite to replace it)")


@contextlib.contextmanager
def atomic_directory(outdir: str | os.PathLike, *,
                     overwrite: bool = False) -> Iterator[str]:
    """Yields a new temporary directory beside ``outdir`` to write to.

    On a normal exit it is renamed to ``outdir``; a non-empty ``outdir``
    (allowed only with ``overwrite``) is replaced only then. On an
    exception the temporary directory is removed and ``outdir`` stays as
    it was (not created, if it did not exist). Checked with
    :func:`check_output_directory` before and after the writing.
    """
    import shutil
    import tempfile

    outdir = os.path.abspath(os.fspath(outdir))
    check_output_directory(outdir, overwrite)
    parent = os.path.dirname(outdir)
    os.makedirs(parent, exist_ok=True)
    base = os.path.basename(outdir)
    # created like any directory (0o777 less the umask; mkdtemp's would
    # be private), under a name no other writer has
    while True:
        tmp = os.path.join(parent, f".{base}.tmp-{secrets.token_hex(4)}")
        try:
            os.mkdir(tmp)
            break
        except FileExistsError:
            continue
    old = None
    try:
        yield tmp
        check_output_directory(outdir, overwrite)
        if os.path.isdir(outdir) and os.listdir(outdir):
            old = tempfile.mkdtemp(prefix=f".{base}.old-", dir=parent)
            os.rmdir(old)
            os.replace(outdir, old)
        elif os.path.isdir(outdir):
            os.rmdir(outdir)
        os.replace(tmp, outdir)
        tmp = None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

