"""Write a file completely or not at all.

Every file bilm_keras writes goes to a temporary file beside its target
and is renamed onto it only when complete. That covers HDF5 weights and
embeddings, options.json, vocabularies and corpus shards. So an
interrupted or failed write never leaves a half-written file, and an
existing file stays as it was.

A write that fills the disk raises
:class:`~bilm_keras._utils.disk_full.DiskFullError`, after its temporary
file is removed. Its one line names the path, the bytes written when the
device filled, and the space free. HDF5 files are written through
:func:`hdf5_for_writing` (:func:`atomic_hdf5`), so that a full disk is an
error h5py raises, not a crash.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from typing import TYPE_CHECKING, Iterator

from bilm_keras._utils.disk_full import disk_full_error, full_errno

if TYPE_CHECKING:
    import h5py


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """Yields a temporary path beside ``path`` to write to.

    On a normal exit the temporary file replaces ``path`` (``os.replace``).
    On an exception it is removed. It has the permissions of any new file,
    ``0o666`` less the umask. Its name, ``<name>.tmp-XXXX.tmp``, shows what
    it was for should a killed process leave one behind. An error that
    says the disk is full, Python's, h5py's or TensorFlow's, becomes a
    :class:`~bilm_keras._utils.disk_full.DiskFullError` naming ``path``.
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
    written = 0
    try:
        yield tmp
        os.replace(tmp, path)
    except Exception as e:
        if full_errno(e) is not None and os.path.exists(tmp):
            written = os.path.getsize(tmp)
        _remove(tmp)
        _raise_if_full(e, path, written)
        raise
    finally:
        _remove(tmp)


@contextlib.contextmanager
def hdf5_for_writing(path: str | os.PathLike) -> Iterator["h5py.File"]:
    """A new HDF5 file at ``path`` (an ``h5py.File``), written through a
    Python file object and synced to the disk when complete.

    h5py's own POSIX driver meets a failed write, such as a full disk,
    inside the release of an object. The error is printed as "ignored",
    and the process may then crash with a segmentation fault (h5py 3.14,
    HDF5 1.14). A small dataset flushed at the file's close does it.
    Through a Python file object, the write's ``OSError`` (``ENOSPC``) is
    raised by the call that wrote, and the file can be discarded.
    """
    import h5py

    with open(path, "w+b") as raw:
        with h5py.File(raw, "w") as f:
            yield f
        raw.flush()
        os.fsync(raw.fileno())


@contextlib.contextmanager
def atomic_hdf5(path: str | os.PathLike) -> Iterator["h5py.File"]:
    """:func:`hdf5_for_writing` a temporary file that replaces ``path``
    when complete (:func:`atomic_path`)."""
    with atomic_path(path) as tmp, hdf5_for_writing(tmp) as f:
        yield f


def _remove(path: str) -> None:
    if os.path.exists(path):
        os.remove(path)


def _raise_if_full(error: Exception, path: str, written: int) -> None:
    """Raises ``error`` as a ``DiskFullError`` about ``path`` if it is
    one (``written``: the bytes on disk when the device filled)."""
    full = disk_full_error(error, path, needed=written or None,
                           at_least=True)
    if full is not None and full is not error:
        raise full from error


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

    On a normal exit it is renamed to ``outdir``. A non-empty ``outdir``,
    allowed only with ``overwrite``, is replaced only then. On an
    exception the temporary directory is removed, and ``outdir`` stays as
    it was, not created if it did not exist. Checked with
    :func:`check_output_directory` before and after the writing. A full
    disk raises :class:`~bilm_keras._utils.disk_full.DiskFullError`
    naming ``outdir``, after the temporary directory is removed.
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
    except Exception as e:
        written = (folder_bytes(tmp) if tmp is not None
                   and full_errno(e) is not None else 0)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp = None
        _raise_if_full(e, outdir, written)
        raise
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def folder_bytes(folder: str) -> int:
    """Bytes in the files under ``folder`` (one that vanishes meanwhile
    counts 0)."""
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total

