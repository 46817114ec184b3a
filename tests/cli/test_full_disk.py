"""Every writer of the command, on a disk that fills up: one line naming
the output, the bytes and the space free, exit 1, and nothing left on the
disk (``embed``, ``merge-embeddings`` and ``train``/``restart``'s
checkpoints are tested with their own runs: tests/embedding/test_runs.py,
tests/training/test_checkpoints.py).

The disk is a real tmpfs where the test may mount one (``small_disk``),
else ENOSPC is injected where the atomic writer every command shares
puts its complete temporary file in place (the seam they all go
through)."""

import errno
import os

import pytest
from full_disk import names

from bilm_keras import cli

KiB = 1024


def _command(name, model_dir, manylangs_fixtures, save_dir, disk):
    model = ["--options_file", model_dir / "options.json",
             "--weight_file", model_dir / "lm_weights.hdf5"]
    out, args = {
        "dump-tokens": (disk / "tokens.hdf5", [
            *model, "--vocab_file", model_dir / "vocab_test.txt"]),
        "dump-weights": (disk / "lm_weights.hdf5", [
            "--save_dir", save_dir]),
        "export-hub": (disk / "hub", [
            *model, "--vocab_file", model_dir / "vocab_test.txt"]),
        "convert-manylangs": (disk / "converted", [
            "--model_dir", manylangs_fixtures / "tiny.model"]),
    }[name]
    flag = "--outdir" if name in ("export-hub", "convert-manylangs") else (
        "--outfile")
    return out, [name, *map(str, args), flag, str(out)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dump-tokens", "dump-weights",
                                  "export-hub", "convert-manylangs"])
def test_a_writer_on_a_full_disk_is_one_line_and_leaves_nothing(
        name, model_dir, manylangs_fixtures, short_char_run, small_disk,
        monkeypatch, capsys):
    disk = small_disk(8 << 20)
    # dump-weights reads the session's short training run (not written
    # into), not a run of its own
    out, argv = _command(name, model_dir, manylangs_fixtures,
                         short_char_run[0], disk.path)
    if disk.real:
        disk.fill(leave=8 * KiB)
    else:
        replace = os.replace

        def full(src, dst):
            if ".tmp-" in os.path.basename(src):  # ours, complete
                raise OSError(errno.ENOSPC, "No space left on device", src)
            return replace(src, dst)

        monkeypatch.setattr(os, "replace", full)
    capsys.readouterr()
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"bilm-keras {name}: error: {out}: no space "
                              f"left on device (")
    assert err[-1].endswith(" free); free some space and run the command "
                            "again")
    assert "Traceback" not in "\n".join(err)
    assert names(disk.path) == []
