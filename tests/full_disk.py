"""A disk that fills up, for the tests of "no space left on device"
(``from full_disk import ...``; the ``small_disk`` fixture in
``conftest.py`` makes one).

Where this process may mount a file system (Linux, root, as in this
project's sandbox), :class:`SmallDisk` is a real tmpfs of a few MiB under
the test's folder (``mount -t tmpfs -o size=N tmpfs DIR``): every writer,
Python's, h5py's C library or TensorFlow's C++, meets a real ``ENOSPC``.
Where it may not (CI without root), the folder is an ordinary one and the
test injects the error the writer would meet, at the writer's seam
(:func:`h5py_disk_full`, :func:`tensorflow_disk_full`, or
:func:`fail_hdf5_writes`: ``OSError(ENOSPC)`` from the ``write`` of the
file object HDF5 files are written through), with the exception type and
text the real library gives. Each test says which ran
(``record_property("full_disk", disk.mode)`` and a printed line).
``FULL_DISK_INJECT=1`` in the environment makes the tests inject where
they could mount (to check that path here).
"""

import errno
import os
import pathlib
import shutil
import subprocess

#: the text h5py's C library puts in the error of a write that found the
#: device full (its ``errno = 28`` is what the translator reads)
H5PY_FULL = ("Can't synchronously write data (file write failed: time = "
             "Mon Jan  1 00:00:00 2026\n, filename = '{path}', file "
             "descriptor = 3, errno = 28, error message = 'No space left on "
             "device', buf = 0x0, total write size = 65536, bytes this "
             "sub-write = 65536, bytes actually written = "
             "18446744073709551615, offset = 0)")


class SmallDisk:
    """A folder whose file system fills up.

    Attributes:
        path: the folder (empty at first).
        mode: ``"tmpfs"`` (a real small file system) or ``"injected"``
            (an ordinary folder: the test injects ENOSPC itself).
    """

    def __init__(self, path: pathlib.Path, size: int):
        self.path = pathlib.Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.mode = "injected"
        self._ballast = None
        # FULL_DISK_INJECT=1: test the injected path where tmpfs would run
        if (os.geteuid() == 0 and shutil.which("mount")
                and not os.environ.get("FULL_DISK_INJECT")):
            done = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                 str(self.path)], capture_output=True, timeout=30)
            if done.returncode == 0:
                self.mode = "tmpfs"

    @property
    def real(self) -> bool:
        return self.mode == "tmpfs"

    def free(self) -> int:
        return shutil.disk_usage(self.path).free

    def fill(self, leave: int = 0) -> None:
        """Takes all but ``leave`` bytes of the free space (a ballast
        file; tmpfs only)."""
        assert self.real
        self.free_space()
        self._ballast = self.path / ".ballast"
        size = max(self.free() - leave, 0)
        with open(self._ballast, "wb") as f:
            f.truncate(0)
            while size > 0:  # tmpfs: written pages take the space
                chunk = min(size, 1 << 20)
                f.write(b"\0" * chunk)
                size -= chunk

    def free_space(self) -> None:
        """Removes the ballast: the space is free again."""
        if self._ballast is not None and self._ballast.exists():
            self._ballast.unlink()
        self._ballast = None

    def close(self) -> None:
        if self.real:
            done = subprocess.run(["umount", str(self.path)],
                                  capture_output=True, timeout=30)
            if done.returncode != 0:
                subprocess.run(["umount", "-l", str(self.path)],
                               capture_output=True, timeout=30)
            self.mode = "unmounted"


class _FullFile:
    """A file object whose writes fail as on a full device."""

    def __init__(self, raw):
        self._raw = raw

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device", self._raw.name)

    def __getattr__(self, name):
        return getattr(self._raw, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._raw.close()


def fail_hdf5_writes(monkeypatch, fails) -> None:
    """Every HDF5 file bilm_keras writes (through
    ``atomic_files.hdf5_for_writing``) to a path for which ``fails(path)``
    is true meets a full device at its first write."""
    from bilm_keras._utils import atomic_files

    def open_for_hdf5(path, mode="r", *args, **kwargs):
        raw = open(path, mode, *args, **kwargs)
        return _FullFile(raw) if fails(os.fspath(path)) else raw

    monkeypatch.setattr(atomic_files, "open", open_for_hdf5, raising=False)


def h5py_disk_full(path) -> OSError:
    """The error h5py raises for a write that found the device full."""
    return OSError(errno.ENOSPC, H5PY_FULL.format(path=path))


def tensorflow_disk_full(path):
    """The error TensorFlow raises for a checkpoint or SavedModel write
    that found the device full."""
    import tensorflow as tf

    return tf.errors.ResourceExhaustedError(
        None, None, f"{path}; No space left on device [Op:SaveV2]")


def names(folder) -> list:
    """Every file and folder under ``folder``, relative, sorted."""
    folder = pathlib.Path(folder)
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.name != ".ballast")
