"""atomic_path / write_text_atomic / atomic_directory: all or nothing."""

import os
import pathlib
import stat

import pytest

from bilm_keras._utils.atomic_files import atomic_path, write_text_atomic


def test_success_replaces_the_file(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    write_text_atomic(target, "old\n")
    write_text_atomic(target, "新しい\n")
    assert target.read_text(encoding="utf-8") == "新しい\n"
    assert [p.name for p in target.parent.iterdir()] == ["out.txt"]


def test_failure_keeps_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "out.hdf5"
    target.write_text("complete")
    with pytest.raises(RuntimeError, match="interrupted"):
        with atomic_path(target) as tmp:
            assert tmp.startswith(str(target) + ".tmp-")
            with open(tmp, "w") as f:
                f.write("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "complete"
    assert [p.name for p in tmp_path.iterdir()] == ["out.hdf5"]


def test_file_gets_the_usual_permissions(tmp_path):
    target = tmp_path / "options.json"
    old = os.umask(0o022)
    try:
        write_text_atomic(target, "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_atomic_directory(tmp_path):
    from bilm_keras._utils.atomic_files import (
        OutputDirectoryError,
        atomic_directory,
    )

    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with atomic_directory(out) as tmp:
            (pathlib.Path(tmp) / "a.txt").write_text("half")
            raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with atomic_directory(out) as tmp:
        (pathlib.Path(tmp) / "a.txt").write_text("1")
    assert (out / "a.txt").read_text() == "1"
    with pytest.raises(OutputDirectoryError, match="found one with files"):
        with atomic_directory(out):
            pass
    with atomic_directory(out, overwrite=True) as tmp:
        (pathlib.Path(tmp) / "b.txt").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == ["b.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
