"""A checkpoint's files checked from its index (no tensor read), and a
save_dir's checkpoints listed newest first: bilm-tf's (the fixture run)
and ours (``tf.train.CheckpointManager``, as training writes them), with
files removed and cut short on disk."""

import os
import pathlib
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras._utils.settings import SettingError
from bilm_keras.weights.checkpoint_files import (
    CheckpointIndexError,
    checkpoint_damage,
    checkpoint_step,
    list_checkpoints,
    read_checkpoint_index,
    resolve_checkpoint,
)

RUN = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "bilm_tf_run"
DATA = ".data-00000-of-00001"


def _ours(save_dir, steps=(100, 200, 217)):
    """Checkpoints as our training writes them: ``model-N``, a state
    file, an object graph (a string tensor) beside float tensors."""
    checkpoint = tf.train.Checkpoint(
        weights={"a": tf.Variable(np.arange(600, dtype=np.float32)
                                  .reshape(100, 6)),
                 "b": tf.Variable(np.ones(7, np.float32))},
        step=tf.Variable(0, dtype=tf.int64))
    manager = tf.train.CheckpointManager(checkpoint, str(save_dir),
                                         max_to_keep=5,
                                         checkpoint_name="model")
    for step in steps:
        checkpoint.step.assign(step)
        manager.save(checkpoint_number=step)
    return save_dir


def _cut(path, n_bytes):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - n_bytes)


def test_the_index_says_where_every_tensor_is():
    prefix = RUN / "save_dir" / "model.ckpt-40"
    index = read_checkpoint_index(prefix)
    reader = tf.train.load_checkpoint(str(prefix))
    shapes = reader.get_variable_to_shape_map()
    assert index.num_shards == 1
    assert sorted(index.extents) == sorted(shapes)
    # every tensor's extent is its float32 bytes, one after another
    ends = []
    for name, extent in index.extents.items():
        nbytes = reader.get_tensor(name).nbytes
        assert (extent.shard, extent.size) == (0, nbytes), name
        ends.append(extent.offset + extent.size)
    assert sorted(ends)[-1] == index.shard_sizes()[0]
    assert index.shard_sizes() == [os.path.getsize(f"{prefix}{DATA}")]


def test_our_checkpoints_are_as_long_as_their_index_says(tmp_path):
    save_dir = _ours(tmp_path)
    for step in (100, 200, 217):
        prefix = save_dir / f"model-{step}"
        index = read_checkpoint_index(prefix)
        assert "_CHECKPOINTABLE_OBJECT_GRAPH" in index.extents
        assert index.shard_sizes() == [os.path.getsize(f"{prefix}{DATA}")]
        assert checkpoint_damage(prefix) is None


@pytest.mark.parametrize("n_bytes", [1, 4, 2400])
def test_a_data_file_cut_short(tmp_path, n_bytes):
    save_dir = _ours(tmp_path)
    data = save_dir / f"model-217{DATA}"
    size = os.path.getsize(data)
    _cut(data, n_bytes)
    assert checkpoint_damage(save_dir / "model-217") == (
        f"model-217{DATA}: cut short ({size - n_bytes} of {size} bytes)")
    assert checkpoint_damage(save_dir / "model-200") is None


def test_missing_and_cut_short_files(tmp_path):
    save_dir = _ours(tmp_path)
    (save_dir / f"model-217{DATA}").unlink()
    assert checkpoint_damage(save_dir / "model-217") == (
        f"model-217{DATA}: missing (the checkpoint's values; "
        "model-217.index is there without them)")
    (save_dir / "model-200.index").unlink()
    assert checkpoint_damage(save_dir / "model-200") == (
        "model-200.index: missing")
    for n_bytes in (1, 30, os.path.getsize(save_dir / "model-100.index")
                    - 10):
        shutil.copy(save_dir / "model-100.index", tmp_path / "saved")
        _cut(save_dir / "model-100.index", n_bytes)
        problem = checkpoint_damage(save_dir / "model-100")
        assert problem.startswith("model-100.index: unreadable (no table "
                                  "footer in its "), problem
        shutil.copy(tmp_path / "saved", save_dir / "model-100.index")
    assert checkpoint_damage(save_dir / "model-100") is None


def test_an_index_that_is_not_a_table(tmp_path):
    (tmp_path / "model-1.index").write_bytes(b"\0" * 100)
    with pytest.raises(CheckpointIndexError, match="no table footer"):
        read_checkpoint_index(tmp_path / "model-1")


def test_list_newest_first_with_what_the_state_file_names(tmp_path):
    save_dir = _ours(tmp_path / "run")
    assert list_checkpoints(save_dir) == [
        str(save_dir / f"model-{s}") for s in (217, 200, 100)]
    # files gone, still named by the state file: listed (to be reported)
    for path in save_dir.glob("model-217.*"):
        path.unlink()
    assert list_checkpoints(save_dir)[0] == str(save_dir / "model-217")
    assert checkpoint_step(str(save_dir / "model-217")) == 217
    # no state file: the files alone
    (save_dir / "checkpoint").unlink()
    assert list_checkpoints(save_dir) == [
        str(save_dir / f"model-{s}") for s in (200, 100)]


def test_a_state_file_from_another_machine(tmp_path):
    # bilm-tf's absolute paths, copied here: the files of those names
    save_dir = tmp_path / "copied"
    shutil.copytree(RUN / "save_dir", save_dir)
    assert list_checkpoints(save_dir) == [str(save_dir / "model.ckpt-40")]
    (save_dir / "checkpoint").write_text(
        'model_checkpoint_path: "/elsewhere/run/model.ckpt-60"\n'
        'all_model_checkpoint_paths: "/elsewhere/run/model.ckpt-40"\n'
        'all_model_checkpoint_paths: "/elsewhere/run/model.ckpt-60"\n')
    assert list_checkpoints(save_dir) == [str(save_dir / "model.ckpt-60"),
                                          str(save_dir / "model.ckpt-40")]
    (save_dir / "checkpoint").write_text("not a state file {{{")
    assert list_checkpoints(save_dir) == [str(save_dir / "model.ckpt-40")]


def test_resolve_a_named_checkpoint(tmp_path):
    save_dir = _ours(tmp_path / "run")
    expected = str(save_dir / "model-200")
    for name in ("model-200", "model-200.index", f"model-200{DATA}",
                 expected):
        assert resolve_checkpoint(save_dir, name) == expected
    with pytest.raises(SettingError) as info:
        resolve_checkpoint(save_dir, "model-300")
    assert info.value.field == "checkpoint"
    assert info.value.reason == (
        f"expected a checkpoint of {save_dir} (model-217, model-200, "
        "model-100), found 'model-300'")
