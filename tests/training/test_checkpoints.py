"""Checkpoints written whole or not at all
(``bilm_keras/training/checkpoints.py``'s ``CheckpointWriter``): a save
that does not fit on the disk leaves the checkpoints before it as they
were and nothing of its own; the two newest are kept at least.

The disk is a real tmpfs where the test may mount one (``small_disk``),
else TensorFlow's ENOSPC error is injected where the manager writes."""

import os

import numpy as np
import pytest
import tensorflow as tf
from full_disk import names, tensorflow_disk_full

from bilm_keras._utils.disk_full import DiskFullError
from bilm_keras.training.checkpoints import (
    CheckpointWriter,
    checkpoint_bytes,
)

MiB = 1 << 20


def _checkpoint(value=1.0):
    weights = tf.Variable(tf.fill((MiB // 4,), value))  # 1 MiB of float32
    step = tf.Variable(0, dtype=tf.int64)
    return tf.train.Checkpoint(weights=weights, step=step), weights


# free pages (4 KiB) left for the save of 1 MiB: the disk fills in the
# data shard, then (tmpfs) in the index or the record after it
@pytest.mark.parametrize("pages_left", [128, 257, 258])
def test_a_checkpoint_that_does_not_fit_leaves_the_one_before(
        small_disk, monkeypatch, pages_left):
    disk = small_disk(4 * MiB)
    if not disk.real and pages_left != 128:
        pytest.skip("injected: one failure point is enough")
    checkpoint, weights = _checkpoint()
    writer = CheckpointWriter(checkpoint, str(disk.path), max_to_keep=3,
                              n_bytes=checkpoint_bytes([weights]))
    first = writer.save(10)
    assert first == str(disk.path / "model-10")
    before = {name: (disk.path / name).read_bytes()
              for name in names(disk.path)}
    weights.assign(tf.fill(weights.shape, 2.0))
    if disk.real:
        disk.fill(leave=pages_left * 4096)
    else:
        write = tf.train.Checkpoint._write

        def full(self, prefix, options=None):
            os.makedirs(prefix + "_temp")  # what TensorFlow leaves
            open(os.path.join(prefix + "_temp", "part-00000-of-00001.data-"
                              "00000-of-00001.tempstate1"), "wb").close()
            raise tensorflow_disk_full(prefix + "_temp/part-00000-of-"
                                       "00001.data-00000-of-00001")

        monkeypatch.setattr(tf.train.Checkpoint, "_write", full)
    with pytest.raises(DiskFullError) as raised:
        writer.save(20)
    message = str(raised.value)
    assert message.startswith(f"{disk.path / 'model-20'}: no space left on "
                              f"device (needs about 1.0 MiB, ")
    assert message.endswith(" free); model-10 is whole; free some space "
                            "and continue from it (restart)")
    # nothing of model-20: no _temp folder, no index, no data
    assert {name: (disk.path / name).read_bytes()
            for name in names(disk.path)} == before
    assert tf.train.latest_checkpoint(str(disk.path)) == first
    # and model-10 restores whole
    disk.free_space()
    if not disk.real:
        monkeypatch.setattr(tf.train.Checkpoint, "_write", write)
    restored, restored_weights = _checkpoint(value=0.0)
    restored.restore(first).assert_existing_objects_matched()
    np.testing.assert_array_equal(restored_weights.numpy(),
                                  np.ones(MiB // 4, np.float32))
    # the run can go on once there is space
    assert writer.save(20) == str(disk.path / "model-20")


def test_two_newest_are_kept_and_killed_saves_are_cleaned(tmp_path):
    checkpoint, _ = _checkpoint()
    # what a save killed by SIGKILL leaves: its temporary folder, and the
    # record's temporary file
    (tmp_path / "model-7_temp").mkdir()
    (tmp_path / "model-7_temp" / "part-00000-of-00001.index").write_bytes(
        b"x")
    (tmp_path / "checkpoint.tmp5f3c").write_text("half")
    writer = CheckpointWriter(checkpoint, str(tmp_path), max_to_keep=2)
    assert names(tmp_path) == []
    for step in (1, 2, 3):
        writer.save(step)
    assert writer.save(3) == str(tmp_path / "model-3")  # not written again
    assert names(tmp_path) == [
        "checkpoint", "model-2.data-00000-of-00001", "model-2.index",
        "model-3.data-00000-of-00001", "model-3.index"]
    with pytest.raises(ValueError, match=r"max_to_keep: expected an "
                                         r"integer >= 2, found 1"):
        CheckpointWriter(checkpoint, str(tmp_path), max_to_keep=1)
