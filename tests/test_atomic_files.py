"""atomic_path / write_text_atomic: all or nothing."""

import os
import stat

import pytest

from bilm_keras.atomic_files import atomic_path, write_text_atomic


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
