"""A full disk as one line (``bilm_keras/_utils/disk_full.py``), at the
shared seam of the writers: ``atomic_path`` and ``atomic_directory``.

The disk is a real tmpfs where the test may mount one (the
``small_disk`` fixture), else ENOSPC is injected where the write happens
(the writer's block), with the exception the real library raises."""

import errno
import pathlib
import pickle

import h5py
import numpy as np
import pytest
from full_disk import fail_hdf5_writes, h5py_disk_full, names

from bilm_keras._utils.atomic_files import (
    atomic_directory,
    atomic_hdf5,
    atomic_path,
    write_text_atomic,
)
from bilm_keras._utils.disk_full import (
    DiskFullError,
    disk_full_error,
    format_bytes,
    full_errno,
    reporting_disk_full,
)

MiB = 1 << 20


# ------------------------------------------------------- the translator
def test_every_library_s_way_of_saying_it_is_recognised(tmp_path):
    import tensorflow as tf

    full = [
        OSError(errno.ENOSPC, "No space left on device"),
        h5py_disk_full("x.hdf5"),  # OSError from h5py, errno in its text
        RuntimeError("Can't decrement id ref count (file write failed: "
                     "..., errno = 28, error message = 'No space left on "
                     "device', ...)"),  # h5py, at the file's close
        tf.errors.ResourceExhaustedError(
            None, None, "model-100_temp/part-00000-of-00001.data-00000-of-"
                        "00001.tempstate1; No space left on device"),
        tf.errors.InternalError(None, None, "write failed: No space left "
                                            "on device"),
    ]
    for error in full:
        assert full_errno(error) == errno.ENOSPC, error
    assert full_errno(OSError(errno.EDQUOT, "Disk quota exceeded")) == (
        errno.EDQUOT)
    # raised from one: found through the chain
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise ValueError("could not write the part") from inner
    except ValueError as outer:
        assert full_errno(outer) == errno.ENOSPC
    for error in [OSError(errno.EACCES, "Permission denied"),
                  RuntimeError("errno = 2, No such file"),
                  ValueError("28 tokens")]:
        assert full_errno(error) is None
        assert disk_full_error(error, tmp_path) is None


def test_the_message_is_one_line_with_the_sizes(tmp_path):
    error = disk_full_error(OSError(errno.ENOSPC, "x"), tmp_path / "a.hdf5",
                            needed=12_900_000)
    assert isinstance(error, OSError) and error.errno == errno.ENOSPC
    assert error.filename == str(tmp_path / "a.hdf5")
    text = str(error)
    assert "\n" not in text
    assert text.startswith(f"{tmp_path / 'a.hdf5'}: no space left on "
                           f"device (needs about 12.3 MiB, ")
    assert text.endswith(" free); free some space and run the command "
                         "again")
    assert error.free > 0 and error.needed == 12_900_000
    quota = disk_full_error(OSError(errno.EDQUOT, "x"), "q.txt", hint="go")
    assert str(quota).startswith("q.txt: disk quota exceeded (")
    assert str(quota).endswith("free); go")
    assert [format_bytes(n) for n in (0, 1, 512, 1536, 5 * MiB, 3 << 30)] == [
        "0 bytes", "1 byte", "512 bytes", "1.5 KiB", "5.0 MiB", "3.0 GiB"]
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), str(again), again.needed) == (
        DiskFullError, text, error.needed)


def test_reporting_passes_other_errors_unchanged():
    with pytest.raises(KeyError):
        with reporting_disk_full("x"):
            raise KeyError("k")
    with pytest.raises(DiskFullError) as raised:
        with reporting_disk_full("out.txt", needed=10):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert isinstance(raised.value.__cause__, OSError)


# ------------------------------------------- the atomic writers' seam
def test_a_file_that_does_not_fit_leaves_nothing_and_the_old_one(
        small_disk):
    disk = small_disk(2 * MiB)
    target = disk.path / "vocab.txt"
    write_text_atomic(target, "old\n")
    text = "word\n" * 800_000  # 3.8 MiB: more than the disk
    if disk.real:
        with pytest.raises(DiskFullError) as raised:
            write_text_atomic(target, text)
    else:
        with pytest.raises(DiskFullError) as raised:
            with atomic_path(target) as tmp:
                with open(tmp, "w") as f:
                    f.write(text[:1000])
                raise OSError(errno.ENOSPC, "No space left on device", tmp)
    message = str(raised.value)
    assert message.startswith(f"{target}: no space left on device (needs "
                              f"more than ")
    assert message.endswith("free); free some space and run the command "
                            "again")
    assert names(disk.path) == ["vocab.txt"]  # no temporary file
    assert target.read_text() == "old\n"
    if disk.real:  # what is free once the temporary file is gone
        assert raised.value.free == disk.free()


# a small dataset is written at the file's close, a large one at once
@pytest.mark.parametrize("size", [1000, MiB // 4])
def test_an_hdf5_file_that_does_not_fit(small_disk, monkeypatch, size):
    """h5py's own driver crashed the process (a segfault) when a small
    dataset's write at the file's close found the disk full; through
    atomic_hdf5 it is one error."""
    disk = small_disk(2 * MiB)
    target = disk.path / "weights.hdf5"
    if disk.real:
        disk.fill(leave=4096)
    else:
        fail_hdf5_writes(monkeypatch, lambda path: True)
    with pytest.raises(DiskFullError) as raised:
        with atomic_hdf5(target) as f:
            f.create_dataset("W", data=np.ones(size, np.float32))
    assert str(raised.value).startswith(f"{target}: no space left on "
                                        f"device (")
    assert names(disk.path) == []
    disk.free_space()
    monkeypatch.undo()
    with atomic_hdf5(target) as f:  # with space, the same write
        f.create_dataset("W", data=np.ones(size, np.float32))
    with h5py.File(target, "r") as f:
        np.testing.assert_array_equal(f["W"][...], np.ones(size))


def test_a_directory_that_does_not_fit(small_disk):
    disk = small_disk(2 * MiB)
    out = disk.path / "export"
    with pytest.raises(DiskFullError) as raised:
        with atomic_directory(out) as tmp:
            (pathlib.Path(tmp) / "small.txt").write_text("x")
            if not disk.real:
                raise OSError(errno.ENOSPC, "No space left on device")
            (pathlib.Path(tmp) / "big.bin").write_bytes(b"\0" * (3 * MiB))
    assert str(raised.value).startswith(f"{out}: no space left on device ")
    assert names(disk.path) == []
