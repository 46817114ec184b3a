"""Extract a model archive (``.zip``, ``.tar.gz``, ``.tar.bz2``, any tar)
safely, or refuse it.

A member with an absolute path, a ``..`` component, a symbolic or hard
link, or a device, FIFO or other special file is refused. The refusal is
one line naming the archive and the member. A model archive holds folders
and regular files only, so there is nothing to lose by refusing what else
an archive can hold. Nothing is written outside the folder extracted to.
Tar members are also extracted with ``tarfile``'s ``filter="data"`` where
Python has it, in 3.10.12+, 3.11.4+ and 3.12+, as a second guard. Zip
members are checked and written here, one by one.

An archive whose members expand to more than :data:`MAX_EXPANSION` times
its own size, plus a megabyte, is refused before the member that crosses
the bound is written. That is a bomb, not a model: released weights
compress by a few percent, a vocabulary three or four times.

Extraction goes into a folder the caller creates under the cache's
``tmp/``. The caller renames what it builds from it into place. A command
that converts an archive without caching it, such as ``convert-tfhub``,
reads it through :func:`extracted_model`, a temporary folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from typing import Iterator

from bilm_keras.pretrained.errors import PretrainedModelError
from bilm_keras.weights.model_detection import ModelDetectionError, find_model

#: the archive names accepted (the contents decide: a zip, or a tar)
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2",
                    ".tar.xz", ".tar")


#: what the members may expand to, in times the archive's size (+ 1 MiB)
MAX_EXPANSION = 100

#: the first bytes of what is an archive, or the compressed stream of one
_MAGIC = ((b"PK", "zip file"), (b"BZh", "bzip2 file"),
          (b"\x1f\x8b", "gzip file"), (b"\xfd7zXZ", "xz file"))


def _parts(name: str) -> list:
    return [part for part in name.replace("\\", "/").split("/")
            if part not in ("", ".")]


def _refuse(label: str, member: str, why: str) -> PretrainedModelError:
    return PretrainedModelError(
        f"{label}: member {member!r}: refused ({why}); expected a model "
        "archive of folders and regular files with relative paths")


def _check_name(label: str, name: str) -> list:
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise _refuse(label, name, "an absolute path")
    parts = _parts(name)
    if ".." in parts:
        raise _refuse(label, name, "a path with '..'")
    return parts


def _target(outdir: str, parts: list) -> str:
    target = os.path.join(outdir, *parts)
    # belt and braces: the checks above make this hold
    real_out = os.path.realpath(outdir)
    if os.path.commonpath([os.path.realpath(target), real_out]) != real_out:
        raise AssertionError(f"{target} is outside {outdir}")
    return target


def _expansion_check(label: str, archive: str, member: str,
                     total: int) -> None:
    bound = MAX_EXPANSION * os.path.getsize(archive) + (1 << 20)
    if total > bound:
        raise _refuse(label, member, f"the members expand to {total} bytes "
                      f"or more, over {MAX_EXPANSION} times the archive's "
                      "size: a bomb")


def _zip_kind(info: zipfile.ZipInfo) -> str:
    # Unix zips keep st_mode in the high 16 bits; many writers (Python's
    # writestr among them) set permission bits only: no type, a file
    kind = stat.S_IFMT(info.external_attr >> 16)
    if info.create_system != 3 or kind in (0, stat.S_IFREG, stat.S_IFDIR):
        return ""
    if kind == stat.S_IFLNK:
        return "a symbolic link"
    return "a device, FIFO or other special file"


def _extract_zip(archive: str, outdir: str, label: str) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        checked, total = [], 0
        for info in infos:  # every name first: nothing written if refused
            parts = _check_name(label, info.filename)
            kind = _zip_kind(info)
            if kind:
                raise _refuse(label, info.filename, kind)
            checked.append((info, parts))
            # a member yields at most its declared size (zipfile's rule)
            total += info.file_size
            _expansion_check(label, archive, info.filename, total)
        for info, parts in checked:
            if not parts:
                continue
            target = _target(outdir, parts)
            if info.is_dir():
                os.makedirs(target, exist_ok=True)
                continue
            try:
                src = zf.open(info)
            except OSError as e:  # an offset past what a file can seek
                raise _refuse(label, info.filename,
                              f"unreadable: {e}") from None
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return "a symbolic link"
    if member.islnk():
        return "a hard link"
    if member.isdev():
        return "a device or FIFO"
    if not (member.isreg() or member.isdir()):
        return "a special file"
    return ""


def _extract_tar(archive: str, outdir: str, label: str) -> None:
    extract_kwargs = ({"filter": "data"} if hasattr(tarfile, "data_filter")
                      else {})
    # one pass (a .tar.bz2 is slow to decompress): each member is checked
    # before it is written; a refusal midway leaves what was written in the
    # caller's temporary folder, which the caller removes
    total = 0
    with tarfile.open(archive, "r:*") as tf:
        for member in tf:
            parts = _check_name(label, member.name)
            kind = _tar_kind(member)
            if kind:
                raise _refuse(label, member.name, kind)
            total += member.size
            _expansion_check(label, archive, member.name, total)
            if not parts:
                continue
            _target(outdir, parts)
            tf.extract(member, outdir, set_attrs=False, **extract_kwargs)


def extract_archive(archive: str, outdir: str, *,
                    label: str | None = None) -> None:
    """Extracts ``archive`` (a zip or a tar, by its contents) into the
    existing folder ``outdir``.

    Args:
        archive: the archive file.
        outdir: an empty folder to extract into.
        label: what errors call the archive (default: its path), e.g. the
            URL it was downloaded from.

    Raises:
        PretrainedModelError: not a zip or tar file, an unreadable
            (truncated, corrupt, encrypted) archive, or a refused member
            (see the module doc).
    """
    label = label or archive
    try:
        if zipfile.is_zipfile(archive):
            _extract_zip(archive, outdir, label)
        elif tarfile.is_tarfile(archive):
            _extract_tar(archive, outdir, label)
        else:
            with open(archive, "rb") as f:
                head = f.read(6)
            for magic, kind in _MAGIC:
                if head.startswith(magic):
                    raise PretrainedModelError(
                        f"{label}: cannot read the archive (a {kind} that "
                        "is not a complete zip or tar: truncated or "
                        "corrupt)")
            raise PretrainedModelError(
                f"{label}: expected an archive ({', '.join(ARCHIVE_SUFFIXES)})"
                ", found a file that is neither a zip nor a tar")
    except PretrainedModelError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError,
            RuntimeError, NotImplementedError, ValueError, OSError) as e:
        if isinstance(e, OSError) and e.errno is not None:
            raise  # the disk's, not the archive's (gzip's and bz2's
            # damaged streams raise OSError without an errno)
        raise PretrainedModelError(
            f"{label}: cannot read the archive ({type(e).__name__}: {e})"
        ) from None


@contextlib.contextmanager
def extracted_model(archive: str | os.PathLike, *,
                    family: str) -> Iterator[str]:
    """The folder of the one model in ``archive``, extracted into a
    temporary folder that is removed afterwards.

    A ``ValueError`` raised inside the ``with`` block is raised again, of
    its type, naming the archive instead of the temporary folder.

    Args:
        archive: the archive file.
        family: the family the model must be, e.g.
            :data:`~bilm_keras.weights.model_detection.TFHUB_TF1`.

    Raises:
        PretrainedModelError: as :func:`extract_archive` says, no model in
            the archive or more than one, or one of another family.
    """
    label = os.fspath(archive)
    with tempfile.TemporaryDirectory(prefix="bilm_archive.") as tmp:
        extract_archive(label, tmp, label=label)
        try:
            model = find_model(tmp, label=label)
        except ModelDetectionError as e:
            raise PretrainedModelError(str(e)) from None
        if model.family != family:
            raise PretrainedModelError(
                f"{label}: expected a {family} model, found a "
                f"{model.family} model (pass it to from_pretrained or "
                "`bilm-keras embed` as it is)")
        try:
            yield model.model_dir
        except ValueError as e:
            shown = (str(e).replace(tmp + ": ", "")
                     .replace(tmp + os.sep, "").replace(tmp, "."))
            raise type(e)(f"{label}: {shown}") from None
