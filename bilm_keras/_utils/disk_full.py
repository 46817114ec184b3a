"""A full disk as one clear error: :class:`DiskFullError`.

Each library that writes for bilm_keras says "no space left" its own way:

* Python's ``open``/``os.write`` raise ``OSError`` with errno ``ENOSPC``.
* h5py raises ``OSError`` or ``RuntimeError`` with ``errno = 28`` inside
  its message, often from the file's close. The message reads ``Can't
  decrement id ref count (file write failed: ... errno = 28, error message
  = 'No space left on device' ...)``.
* TensorFlow, for checkpoints and SavedModels, raises a
  ``ResourceExhaustedError`` or ``InternalError`` whose message ends in
  ``No space left on device``.

:func:`reporting_disk_full` turns any of them, at a writer's boundary,
into a :class:`DiskFullError`. That is one line naming the path, the bytes
the write needed where the writer knows them, the space free, and what to
do. Disk quotas (``EDQUOT``) count as full.

Pure Python: nothing here imports TensorFlow or h5py. Their errors are
recognised by their text.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from typing import Iterator, Optional

#: the errnos of a full device or an exhausted quota
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# how h5py (``errno = 28``) and TensorFlow / the C library (strerror) put
# it in a message
_FULL_TEXT = re.compile(
    r"no space left on device|disk quota exceeded|"
    rf"errno = (?:{'|'.join(str(e) for e in FULL_ERRNOS)})\b",
    re.IGNORECASE)


class DiskFullError(OSError):
    """A write that found no space left on its device.

    ``str(error)`` is one line: ``PATH: no space left on device (needs
    about 12.3 MiB, 1.1 MiB free); HINT``.

    Attributes:
        errno: ``ENOSPC`` (or ``EDQUOT`` for a quota).
        filename: the path that was being written.
        needed: the bytes the write needed (at least), or None if unknown.
        free: the bytes free on the device after the failed write's
            temporary files were removed.
    """

    def __init__(self, path: str, *, free: int, needed: Optional[int] = None,
                 at_least: bool = False, hint: Optional[str] = None,
                 code: int = errno.ENOSPC):
        self.needed, self.free = needed, free
        what = ("disk quota exceeded" if code == errno.EDQUOT
                else "no space left on device")
        if needed is None:
            sizes = f"{format_bytes(free)} free"
        else:
            about = "more than" if at_least else "about"
            sizes = (f"needs {about} {format_bytes(needed)}, "
                     f"{format_bytes(free)} free")
        hint = "free some space and run the command again" if hint is None \
            else hint
        self.message = f"{path}: {what} ({sizes}); {hint}"
        super().__init__(code, self.message, path)

    def __str__(self):
        return self.message

    def __reduce__(self):  # picklable (multiprocessing, Beam workers)
        return _rebuild, (self.filename, self.errno, self.message,
                          self.needed, self.free)


def _rebuild(path, code, message, needed, free):
    error = DiskFullError(path, free=free, needed=needed, code=code)
    error.message = message
    return error


def full_errno(error: BaseException) -> Optional[int]:
    """``ENOSPC``/``EDQUOT`` if ``error``, or an error it was raised from,
    says the device or the quota is full. None otherwise."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        code = getattr(error, "errno", None)
        if code in FULL_ERRNOS:
            return code
        match = _FULL_TEXT.search(str(error))
        if match is not None:
            text = match.group(0).lower()
            return (errno.EDQUOT if "quota" in text
                    or text.endswith(str(errno.EDQUOT)) else errno.ENOSPC)
        error = error.__cause__ or error.__context__
    return None


def free_bytes(path: str | os.PathLike) -> int:
    """Bytes free for this user on the device holding ``path`` (or its
    nearest existing parent)."""
    folder = os.path.abspath(os.fspath(path))
    while not os.path.exists(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return 0


def format_bytes(n: int) -> str:
    """``512 bytes``, ``1.5 KiB``, ``12.3 MiB``, ``2.0 GiB``."""
    if n < 1024:
        return f"{n} byte{'s' * (n != 1)}"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"


def disk_full_error(error: BaseException, path: str | os.PathLike, *,
                    needed: Optional[int] = None, at_least: bool = False,
                    hint: Optional[str] = None) -> Optional[DiskFullError]:
    """``error`` as a :class:`DiskFullError` about ``path``, or None if
    it is not a full disk. Call it after the failed write's temporary files
    are removed: the free space is measured then."""
    if isinstance(error, DiskFullError):
        return error
    code = full_errno(error)
    if code is None:
        return None
    return DiskFullError(os.fspath(path), free=free_bytes(path),
                         needed=needed, at_least=at_least, hint=hint,
                         code=code)


@contextlib.contextmanager
def reporting_disk_full(path: str | os.PathLike, *,
                        needed: Optional[int] = None,
                        hint: Optional[str] = None) -> Iterator[None]:
    """Raises a :class:`DiskFullError` about ``path`` instead of any
    error of the block that says the disk is full (other errors pass
    unchanged). Put the clean-up of the block's temporary files inside it,
    so that the free space is measured after them.

    Args:
        needed: the bytes the block writes, if known.
        hint: what to do, instead of "free some space and run the command
            again".

    Example:
        >>> with reporting_disk_full("out.hdf5"):
        ...     write_the_file()
    """
    try:
        yield
    except Exception as e:
        full = disk_full_error(e, path, needed=needed, hint=hint)
        if full is None or full is e:
            raise
        raise full from e
