"""A run whose latest checkpoint is damaged on disk (issue 29): our own
run's ``model-100``, ``model-200`` and ``model-217``, the last one's
``.data`` cut short or its ``.index`` gone. ``test`` and ``restart`` say
so in one line and use ``model-200``; ``dump-weights`` and ``export-hub``
refuse in one line naming both, unless ``--checkpoint`` names one.

Slow: the run is 217 steps (~10 s). The quick tier checks the same files
without a run (``tests/weights/test_checkpoint_files.py``: checkpoints
written by ``tf.train.CheckpointManager`` as training writes them, cut
short; ``tests/weights/test_bilm_tf_checkpoint.py``: bilm-tf's).
"""

import os
import pathlib
import shutil

import h5py
import numpy as np
import pytest

from bilm_keras import cli
from helpers import fixture_options

pytestmark = pytest.mark.slow

DATA = ".data-00000-of-00001"


@pytest.fixture(scope="module")
def run_217(train_dir, tmp_path_factory):
    """A token-input run's save_dir with checkpoints at steps 100, 200 and
    217 (``--save_every 100``, stopped at step 217)."""
    from bilm_keras.training import TrainingRun, train

    save_dir = tmp_path_factory.mktemp("run_217") / "ckpt"
    train(fixture_options(n_epochs=40), TrainingRun(
        train_prefix=str(train_dir / "data.txt"),
        vocab_file=str(train_dir / "vocab.txt"), save_dir=str(save_dir),
        seed=0, save_every=100, max_steps=217, log_every=1000))
    assert sorted(p.name for p in save_dir.glob("*.index")) == [
        "model-100.index", "model-200.index", "model-217.index"]
    return save_dir


def _damaged(run_217, tmp_path, how="cut"):
    save_dir = tmp_path / "ckpt"
    shutil.copytree(run_217, save_dir)
    if how == "cut":
        data = save_dir / f"model-217{DATA}"
        size = data.stat().st_size
        with open(data, "r+b") as f:
            f.truncate(size - 100)
        problem = f"model-217{DATA}: cut short ({size - 100} of {size} bytes)"
    else:
        (save_dir / "model-217.index").unlink()
        problem = "model-217.index: missing"
    return save_dir, problem


def _tree(root):
    return {p: (p.stat().st_size, p.stat().st_mtime_ns)
            for p in pathlib.Path(root).rglob("*")}


@pytest.mark.parametrize("how", ["cut", "missing index"])
def test_test_falls_back_in_one_line(run_217, train_dir, tmp_path, capsys,
                                     how):
    save_dir, problem = _damaged(run_217, tmp_path, how)
    argv = ["test", "--vocab_file", str(train_dir / "vocab.txt"),
            "--test_prefix", str(train_dir / "data.txt"), "--batch_size",
            "2"]
    got = cli.run(argv + ["--save_dir", str(save_dir)])
    err = capsys.readouterr().err
    assert [line for line in err.splitlines()
            if not line.endswith("empty or whitespace-only line(s)")] == [
        f"WARNING: the latest checkpoint does not read whole ({problem}); "
        "using model-200, the newest that does"]
    assert got["checkpoint"] == str(save_dir / "model-200")
    # the figures of model-200 itself, named in the whole run
    want = cli.run(argv + ["--save_dir", str(run_217), "--checkpoint",
                           "model-200"])
    assert got["perplexity"] == want["perplexity"]


def test_restart_falls_back(run_217, train_dir, tmp_path, capsys):
    save_dir, problem = _damaged(run_217, tmp_path)
    result = cli.run(["restart", "--save_dir", str(save_dir),
                      "--vocab_file", str(train_dir / "vocab.txt"),
                      "--train_prefix", str(train_dir / "data.txt"),
                      "--max_steps", "1"])
    captured = capsys.readouterr()
    assert (f"WARNING: the latest checkpoint does not read whole ({problem}); "
            "using model-200, the newest that does") in captured.err
    assert f"restored {save_dir / 'model-200'} at step 200" in captured.out
    assert result["step"] == 201
    assert (save_dir / "model-201.index").exists()


@pytest.mark.parametrize("command", ["dump-weights", "export-hub"])
def test_a_writer_refuses_then_takes_the_named_one(run_217, tmp_path, capsys,
                                                   command):
    save_dir, problem = _damaged(run_217, tmp_path)
    out = tmp_path / "out"
    target = (["--outfile", str(out / "lm_weights.hdf5")]
              if command == "dump-weights" else ["--outdir", str(out / "hub")])
    argv = [command, "--save_dir", str(save_dir), *target]
    before = _tree(tmp_path)
    assert cli.main(argv) == cli.EXIT_BAD_INPUT
    [line] = capsys.readouterr().err.splitlines()
    assert line == (
        f"bilm-keras {command}: error: {save_dir}: the latest checkpoint "
        f"model-217 does not read whole ({problem}); the newest that does "
        "is model-200: name it to use it (--checkpoint model-200)")
    assert _tree(tmp_path) == before
    if command == "export-hub":
        return
    assert cli.main(argv + ["--checkpoint", "model-200"]) == 0
    # the same file as model-200's dump from the whole run
    whole = tmp_path / "whole" / "lm_weights.hdf5"
    assert cli.main(["dump-weights", "--save_dir", str(run_217),
                     "--checkpoint", "model-200", "--outfile",
                     str(whole)]) == 0
    with h5py.File(out / "lm_weights.hdf5", "r") as a, h5py.File(
            whole, "r") as b:
        names = []
        a.visit(names.append)
        for name in names:
            if isinstance(a[name], h5py.Dataset):
                assert np.array_equal(a[name][...], b[name][...]), name
    assert os.path.exists(out / "options.json")
