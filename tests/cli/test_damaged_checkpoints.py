"""A run whose latest checkpoint is damaged on disk: our own
run's ``model-10``, ``model-20`` and ``model-23``, the last one's
``.data`` cut short or its ``.index`` gone. ``test`` and ``restart`` say
so in one line and use ``model-20``; ``dump-weights`` and ``export-hub``
refuse in one line naming both, unless ``--checkpoint`` names one.

Slow: the run (23 steps, ~3 CPU s) and the commands on it. The quick
tier checks the same files without a run
(``tests/weights/test_checkpoint_files.py``: checkpoints written by
``tf.train.CheckpointManager`` as training writes them, cut short;
``tests/weights/test_bilm_tf_checkpoint.py``: bilm-tf's).
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
def run_23(train_dir, tmp_path_factory):
    """A token-input run's save_dir with checkpoints at steps 10, 20 and 23
    (``--save_every 10``, stopped at step 23): the fallback is two steps
    behind the latest, so ``restart``'s one step writes a new
    ``model-21``, not the damaged checkpoint's name again."""
    from bilm_keras.training import TrainingRun, train

    save_dir = tmp_path_factory.mktemp("run_23") / "ckpt"
    train(fixture_options(n_epochs=40), TrainingRun(
        train_prefix=str(train_dir / "data.txt"),
        vocab_file=str(train_dir / "vocab.txt"), save_dir=str(save_dir),
        seed=0, save_every=10, max_steps=23, log_every=1000))
    assert sorted(p.name for p in save_dir.glob("*.index")) == [
        "model-10.index", "model-20.index", "model-23.index"]
    return save_dir


def _damaged(run_23, tmp_path, how="cut"):
    save_dir = tmp_path / "ckpt"
    shutil.copytree(run_23, save_dir)
    if how == "cut":
        data = save_dir / f"model-23{DATA}"
        size = data.stat().st_size
        with open(data, "r+b") as f:
            f.truncate(size - 100)
        problem = f"model-23{DATA}: cut short ({size - 100} of {size} bytes)"
    else:
        (save_dir / "model-23.index").unlink()
        problem = "model-23.index: missing"
    return save_dir, problem


def _tree(root):
    return {p: (p.stat().st_size, p.stat().st_mtime_ns)
            for p in pathlib.Path(root).rglob("*")}


@pytest.mark.parametrize("how", ["cut", "missing index"])
def test_test_falls_back_in_one_line(run_23, train_dir, tmp_path, capsys,
                                     how):
    save_dir, problem = _damaged(run_23, tmp_path, how)
    argv = ["test", "--vocab_file", str(train_dir / "vocab.txt"),
            "--test_prefix", str(train_dir / "data.txt"), "--batch_size",
            "2"]
    got = cli.run(argv + ["--save_dir", str(save_dir)])
    err = capsys.readouterr().err
    assert [line for line in err.splitlines()
            if not line.endswith("empty or whitespace-only line(s)")] == [
        f"WARNING: the latest checkpoint does not read whole ({problem}); "
        "using model-20, the newest that does"]
    assert got["checkpoint"] == str(save_dir / "model-20")
    # the figures of model-20 itself, named in the whole run
    want = cli.run(argv + ["--save_dir", str(run_23), "--checkpoint",
                           "model-20"])
    assert got["perplexity"] == want["perplexity"]


def test_restart_falls_back(run_23, train_dir, tmp_path, capsys):
    save_dir, problem = _damaged(run_23, tmp_path)
    result = cli.run(["restart", "--save_dir", str(save_dir),
                      "--vocab_file", str(train_dir / "vocab.txt"),
                      "--train_prefix", str(train_dir / "data.txt"),
                      "--max_steps", "1"])
    captured = capsys.readouterr()
    assert (f"WARNING: the latest checkpoint does not read whole ({problem}); "
            "using model-20, the newest that does") in captured.err
    assert f"restored {save_dir / 'model-20'} at step 20" in captured.out
    assert result["step"] == 21
    assert (save_dir / "model-21.index").exists()


@pytest.mark.parametrize("command", ["dump-weights", "export-hub"])
def test_a_writer_refuses_then_takes_the_named_one(run_23, tmp_path, capsys,
                                                   command):
    save_dir, problem = _damaged(run_23, tmp_path)
    out = tmp_path / "out"
    target = (["--outfile", str(out / "lm_weights.hdf5")]
              if command == "dump-weights" else ["--outdir", str(out / "hub")])
    argv = [command, "--save_dir", str(save_dir), *target]
    before = _tree(tmp_path)
    assert cli.main(argv) == cli.EXIT_BAD_INPUT
    [line] = capsys.readouterr().err.splitlines()
    assert line == (
        f"bilm-keras {command}: error: {save_dir}: the latest checkpoint "
        f"model-23 does not read whole ({problem}); the newest that does "
        "is model-20: name it to use it (--checkpoint model-20)")
    assert _tree(tmp_path) == before
    if command == "export-hub":
        return
    assert cli.main(argv + ["--checkpoint", "model-20"]) == 0
    # the same file as model-20's dump from the whole run
    whole = tmp_path / "whole" / "lm_weights.hdf5"
    assert cli.main(["dump-weights", "--save_dir", str(run_23),
                     "--checkpoint", "model-20", "--outfile",
                     str(whole)]) == 0
    with h5py.File(out / "lm_weights.hdf5", "r") as a, h5py.File(
            whole, "r") as b:
        names = []
        a.visit(names.append)
        for name in names:
            if isinstance(a[name], h5py.Dataset):
                assert np.array_equal(a[name][...], b[name][...]), name
    assert os.path.exists(out / "options.json")
