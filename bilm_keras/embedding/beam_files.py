"""Files of a Beam run, on any of Beam's file systems: local paths,
``gs://``, ``s3://``, ``hdfs://``, ...

* The input glob is matched and read with the same checks and messages as
  a local sentence file.
* The model files are fingerprinted and copied to a worker's disk, since
  h5py reads local files only.
* The temporary parts' folder is written and removed.

Used by :mod:`bilm_keras.embedding.beam_inference` for a worker's model
files, and by :mod:`bilm_keras.embedding.beam_dump` for the input, the
parts and the output. Needs ``apache-beam``, the ``beam`` extra, and no
TensorFlow.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Optional

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from bilm_keras.data.sentence_file import (
    SENTENCE_FILE_EXPECTED,
    SentenceFileError,
)
from bilm_keras.data.utf8_lines import decode_line
from bilm_keras.embedding.runs import file_fingerprint

_MIB = 2**20


def is_local(path: str) -> bool:
    """A path of this machine's file system (no scheme, or ``file://``)."""
    return FileSystems.get_scheme(os.fspath(path)) in (None, "file")


def local_path(path: str) -> str:
    """``path`` without a ``file://`` scheme."""
    path = os.fspath(path)
    return path[len("file://"):] if path.startswith("file://") else path


def exists(path: str) -> bool:
    """Whether ``path`` exists, on any Beam file system."""
    if is_local(path):
        return os.path.lexists(local_path(path))
    return FileSystems.exists(path)


def fingerprint(name: str, path: Optional[str]) -> dict:
    """:func:`~bilm_keras.embedding.runs.file_fingerprint` on any Beam file
    system: the same keys and, for one file, the same values (its size and
    a hash of its first and last MiB). ``path`` may be a glob (the input):
    several files give their total size and a hash of their own hashes, in
    path order."""
    if not path:
        return file_fingerprint(name, path)
    paths = [m.path for m in match_files(path)] if _is_glob(path) else [path]
    if len(paths) == 1 and is_local(paths[0]):
        return file_fingerprint(name, local_path(paths[0]))
    sizes, digests = [], []
    for one in paths:
        with FileSystems.open(one, compression_type="uncompressed") as f:
            head = f.read(_MIB)
            f.seek(0, io.SEEK_END)
            size = f.tell()
            digest = hashlib.sha256(head)
            if size > _MIB:
                f.seek(max(_MIB, size - _MIB))
                digest.update(f.read())
        sizes.append(size)
        digests.append(digest.hexdigest()[:16])
    if len(paths) == 1:
        return {f"{name}_size": sizes[0], f"{name}_sha256_ends": digests[0]}
    combined = hashlib.sha256(" ".join(digests).encode("ascii"))
    return {f"{name}_size": sum(sizes),
            f"{name}_sha256_ends": combined.hexdigest()[:16],
            f"{name}_n_files": len(paths)}


def _is_glob(path: str) -> bool:
    return any(c in os.fspath(path) for c in "*?[")


@dataclasses.dataclass(frozen=True)
class MatchedFile:
    """One input file of a glob: its path (as Beam names it) and size."""

    path: str
    size: int


def match_files(pattern: str) -> list[MatchedFile]:
    """The files ``pattern`` (a path or a glob) names, in path order.

    Raises:
        SentenceFileError: no file matches (or the one path is missing or a
            directory), with ``bilm-keras embed``'s messages.
    """
    pattern = os.fspath(pattern)
    if is_local(pattern) and not _is_glob(pattern):
        path = local_path(pattern)  # one local file: embed's own messages
        if os.path.isdir(path):
            raise SentenceFileError(f"{path}: is a directory (expected "
                                    f"{SENTENCE_FILE_EXPECTED})")
        if not os.path.isfile(path):
            raise SentenceFileError(f"{path}: no such file (expected "
                                    f"{SENTENCE_FILE_EXPECTED})")
        return [MatchedFile(pattern, os.path.getsize(path))]
    try:
        metadata = FileSystems.match([pattern])[0].metadata_list
    except (BeamIOError, ValueError, OSError) as e:
        raise SentenceFileError(f"{pattern}: cannot list ({e})") from None
    files = sorted((MatchedFile(m.path, m.size_in_bytes) for m in metadata
                    if not m.path.endswith("/")), key=lambda m: m.path)
    if not files:
        raise SentenceFileError(
            f"{pattern}: no file matches (expected "
            f"{SENTENCE_FILE_EXPECTED}, or a glob of such files; quote it)")
    return files


def read_lines(path: str, *, offset: int = 0,
               first_line: int = 1) -> Iterator[tuple[int, int, str]]:
    """Yields ``(line_number, byte_offset, line)`` of a sentence file on
    any Beam file system from ``offset``.

    ``offset`` is a line's start, and ``first_line`` its 1-based number.
    Lines are decoded as :func:`~bilm_keras.data.utf8_lines.read_utf8_lines`
    does, with its messages. A BOM at the file's start is dropped, and
    ``\\n`` kept.

    Raises:
        SentenceFileError: an unreadable file, or a line that is not valid
            UTF-8, naming the file, line, byte and nearby bytes.
    """
    opener = (_open_local(local_path(path)) if is_local(path)
              else FileSystems.open(path, compression_type="uncompressed"))
    with opener as f:
        if offset:
            f.seek(offset)
        position = offset
        for lineno, raw in enumerate(f, first_line):
            line = decode_line(raw, path=local_path(path),
                               line_number=lineno, first=position == 0,
                               error=SentenceFileError)
            yield lineno, position, line
            position += len(raw)


def _open_local(path: str):
    try:
        return open(path, "rb")
    except OSError as e:
        raise SentenceFileError(f"{path}: cannot open ({e.strerror})"
                                ) from None


def local_copy(path: str, folder: str) -> str:
    """``path`` as a file of this machine: itself if it is local, else a
    copy in ``folder`` (made once: an existing copy of the same size is
    kept)."""
    if is_local(path):
        return local_path(path)
    target = os.path.join(
        folder, hashlib.sha256(path.encode("utf-8")).hexdigest()[:16],
        path.rstrip("/").rsplit("/", 1)[-1])
    metadata = FileSystems.match([path])[0].metadata_list
    if not metadata:
        raise FileNotFoundError(f"{path}: no such file")
    if (os.path.isfile(target)
            and os.path.getsize(target) == metadata[0].size_in_bytes):
        return target
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.tmp-{os.getpid()}"
    with FileSystems.open(path, compression_type="uncompressed") as src, \
            open(tmp, "wb") as dst:
        shutil.copyfileobj(src, dst, _MIB)
    os.replace(tmp, target)
    return target


def upload(local_file: str, path: str) -> None:
    """Puts ``local_file`` at ``path``, on any Beam file system, whole or
    not at all.

    A local ``path`` is written by ``os.replace``, so the caller writes
    beside it, in the same folder. Another goes through a temporary name,
    renamed."""
    if is_local(path):
        os.replace(local_file, local_path(path))
        return
    tmp = f"{path}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    with open(local_file, "rb") as src, FileSystems.create(
            tmp, compression_type="uncompressed") as dst:
        shutil.copyfileobj(src, dst, _MIB)
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([tmp], [path])
    os.remove(local_file)


def remove_tree(path: str) -> None:
    """Removes a folder and what it holds, on any Beam file system. A
    missing one is no error."""
    if is_local(path):
        shutil.rmtree(local_path(path), ignore_errors=True)
        return
    try:
        FileSystems.delete([path.rstrip("/") + "/"])
    except BeamIOError:
        pass


def join(folder: str, name: str) -> str:
    """``folder/name`` on any Beam file system."""
    return FileSystems.join(folder, name)


def scratch_folder() -> str:
    """A private folder of this process for local copies (removed at
    exit by the OS's temp cleaning, not by us: a worker may reuse it)."""
    folder = os.path.join(tempfile.gettempdir(),
                          f"bilm_keras-beam-{os.getuid()}")
    os.makedirs(folder, exist_ok=True)
    return folder
