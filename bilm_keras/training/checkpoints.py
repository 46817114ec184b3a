"""What a ``save_dir`` holds, how checkpoints are written and read back.

A training ``save_dir`` holds ``options.json``, the resolved options. It
holds ``training_data.json``, the training corpus's token and sentence
counts and unigram perplexity. It also holds the checkpoints and
``logs/`` for TensorBoard. What a checkpoint holds is defined once, by
:class:`~bilm_keras.training.run_checkpoint.RunCheckpoint`. One of its
parts is the data stream, :class:`DataStream`, defined here.

:class:`CheckpointWriter` writes them whole or not at all. A save that
fails, above all on a full disk, leaves no ``model-N_temp/`` folder and
no part of ``model-N``, and the checkpoints before it as they were. At
least the :data:`MIN_CHECKPOINTS_KEPT` newest are kept.
"""

from __future__ import annotations

import glob
import math
import os
import random
import shutil
from typing import Callable, Optional

import tensorflow as tf

from bilm_keras._utils.disk_full import reporting_disk_full
from bilm_keras._utils.settings import check_int

#: the fewest checkpoints a run keeps (``max_to_keep``): should the newest
#: be damaged later (a kill during a copy, a disk error), the one before it
#: is still there
MIN_CHECKPOINTS_KEPT = 2
#: the name of a run's checkpoints: ``save_dir/model-STEP``
CHECKPOINT_NAME = "model"
#: beside the checkpoints: the training corpus's token and sentence counts
#: and unigram perplexity (the bar evaluate() holds each direction to)
TRAINING_DATA_FILE = "training_data.json"



class CheckpointWriter:
    """Writes a run's checkpoints, ``directory/model-STEP``, whole or not
    at all.

    A ``tf.train.CheckpointManager`` does the writing, keeping at least
    :data:`MIN_CHECKPOINTS_KEPT`. TensorFlow writes ``model-STEP_temp/``,
    merges it into ``model-STEP.index`` and ``.data-*``, then records the
    new checkpoint in the ``checkpoint`` file and deletes the oldest. A
    save that fails before that record, on a full disk or an I/O error,
    leaves the earlier checkpoints and the record as they were.

    Here it also leaves nothing of its own, as its temporary folder and
    files are removed. A full disk is a
    :class:`~bilm_keras._utils.disk_full.DiskFullError` naming the
    checkpoint, the bytes it needs, the space free and the checkpoint to
    continue from. Temporary folders of a save that was killed by SIGKILL
    are removed when the writer is made.

    Args:
        checkpoint: the ``tf.train.Checkpoint`` to write.
        directory: where to write. The run's ``save_dir``, or a scratch
            folder on a non-chief worker.
        max_to_keep: checkpoints kept, at least 2.
        n_bytes: about how many bytes a checkpoint takes, for the message
            of a full disk.
        before_save: called before each save, to copy what is not a
            variable into the checkpoint's variables.
    """

    def __init__(self, checkpoint: tf.train.Checkpoint, directory: str, *,
                 max_to_keep: int, n_bytes: Optional[int] = None,
                 before_save: Optional[Callable[[], None]] = None):
        check_int("max_to_keep", max_to_keep, MIN_CHECKPOINTS_KEPT)
        self.directory = directory
        self.manager = tf.train.CheckpointManager(
            checkpoint, directory, max_to_keep=max_to_keep,
            checkpoint_name=CHECKPOINT_NAME)
        self.n_bytes, self.before_save = n_bytes, before_save
        self.last_step: Optional[int] = None
        self.last_path: Optional[str] = None
        remove_unfinished_saves(directory)

    def save(self, step: int) -> str:
        """Writes the checkpoint of global step ``step`` and returns its
        path. A step just saved is not written again.

        Raises:
            DiskFullError: the disk or quota is full. Nothing of this
                checkpoint is left.
        """
        if step == self.last_step:
            return self.last_path
        if self.before_save is not None:
            self.before_save()
        prefix = os.path.join(self.directory, f"{CHECKPOINT_NAME}-{step}")
        recorded = set(self.manager.checkpoints)
        with reporting_disk_full(prefix, needed=self.n_bytes,
                                 hint=self._full_disk_hint()):
            try:
                path = self.manager.save(checkpoint_number=step)
            except BaseException:
                # a checkpoint the record lists is whole: never removed
                if prefix not in recorded and prefix not in _recorded(
                        self.directory):
                    _remove_checkpoint_files(prefix)
                remove_unfinished_saves(self.directory)
                raise
        self.last_step, self.last_path = step, path
        return path

    def _full_disk_hint(self) -> str:
        """What to do when this save does not fit."""
        latest = self.manager.latest_checkpoint
        if latest is None:
            return "free some space and run the command again"
        return (f"{os.path.basename(latest)} is whole; free some space and "
                f"continue from it (restart)")


def _recorded(directory: str) -> set:
    """The checkpoints the ``checkpoint`` file of ``directory`` lists."""
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (tf.errors.OpError, ValueError):
        return set()
    if state is None:
        return set()
    return {os.path.join(directory, os.path.basename(p)) for p in
            [state.model_checkpoint_path,
             *state.all_model_checkpoint_paths]}


def _remove_checkpoint_files(prefix: str) -> None:
    """``prefix.index`` and ``prefix.data-*`` (a checkpoint whose save
    failed)."""
    for path in glob.glob(glob.escape(prefix) + ".index") + glob.glob(
            glob.escape(prefix) + ".data-*"):
        os.remove(path)


def remove_unfinished_saves(directory: str) -> None:
    """Removes what TensorFlow leaves of a save that did not finish:
    ``model-STEP_temp/`` folders (the shards before their merge) and
    ``checkpoint.tmp*`` files (the record, before its rename)."""
    pattern = os.path.join(glob.escape(directory), "")
    for path in glob.glob(pattern + f"{CHECKPOINT_NAME}-*_temp*"):
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
    for path in glob.glob(pattern + "checkpoint.tmp*"):
        os.remove(path)


def checkpoint_bytes(variables) -> int:
    """About how many bytes a checkpoint of ``variables`` takes."""
    return sum(math.prod(v.shape) * tf.as_dtype(v.dtype).size
               for v in variables)


class DataStream:
    """Where a run's training data comes from, kept in its checkpoints.

    ``seed`` fixes the stream, its shard order and shuffles.
    ``start_step`` is the global step at which it started, ``batch_size``
    its global batch.

    A run resumed after a crash, by :func:`~bilm_keras.training.restart`
    without ``n_epochs``, rebuilds the same stream. It passes over the
    ``step - start_step`` batches already trained on, so no sentence is
    seen twice or skipped. bilm-tf reshuffled instead. A new stream starts
    when there is none to continue: a fresh run, new epochs for
    fine-tuning, another batch size, or a checkpoint written before
    streams were saved.

    :attr:`base_seed` is the run's seed, or the one drawn for it when it
    had none. It also seeds each step's dropout masks and softmax samples,
    so a continued stream draws them as the uninterrupted run does.

    Attributes:
        continued: whether the restored stream goes on, after
            :meth:`resolve`. Else a new one starts, from zero LSTM states.
    """

    def __init__(self):
        self.variables = {
            name: tf.Variable(0, dtype=tf.int64, trainable=False,
                              name=f"data_{name}")
            for name in ("seed", "start_step", "batch_size")
        }
        self.continued = False

    @property
    def base_seed(self) -> int:
        """The seed the stream was started from: its seed less the step it
        started at."""
        return int(self.variables["seed"].numpy()) - int(
            self.variables["start_step"].numpy())

    def resolve(self, *, restored: bool, continue_stream: bool, step: int,
                batch_size: int, seed: Optional[int]) -> tuple:
        """``(stream seed, batches to skip)``, recorded for the next
        checkpoint."""
        v = self.variables
        self.continued = bool(
            restored and continue_stream
            and int(v["batch_size"].numpy()) == batch_size)
        if self.continued:
            stream_seed = int(v["seed"].numpy())
            skip = step - int(v["start_step"].numpy())
        else:
            base = seed if seed is not None else random.SystemRandom(
            ).randrange(2**31)
            stream_seed, skip = base + step, 0
            v["seed"].assign(stream_seed)
            v["start_step"].assign(step)
            v["batch_size"].assign(batch_size)
        return stream_seed, skip
