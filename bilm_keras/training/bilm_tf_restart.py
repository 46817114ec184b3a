"""A save_dir that bilm-tf's ``train()`` wrote, continued by our training
(it is read, dumped, or the start of a new run through
:mod:`bilm_keras.save_dirs.bilm_tf_run`). What continuing bilm-tf's run
takes:

* :func:`restore_bilm_tf_run`: every weight, the softmax, Adagrad's
  accumulators and the step counter into our model and optimizer, for
  ``restart``.
* :func:`bilm_tf_run_options`: the options a continued run trains with.
  They are bilm-tf's, with its LSTM states carried across sentences unless
  the options say otherwise. bilm-tf's training carried them, and an
  ``options.json`` without ``reset_states_at_sentence_start`` is bilm-tf's.
* :func:`set_aside_bilm_tf_state_file`: bilm-tf's ``checkpoint`` state
  file kept as ``checkpoint.bilm-tf`` before our checkpoints are written
  beside its own. :data:`BILM_TF_STATE_FILE` gives the reason.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Optional

import numpy as np

from bilm_keras.options import OPTIONS_FILE, BiLMOptions
from bilm_keras.training.run_checkpoint import (
    SOFTMAX_B_KEY,
    SOFTMAX_W_KEY,
    ForeignRun,
    RunCheckpoint,
)
from bilm_keras.save_dirs.bilm_tf_run import require_softmax
from bilm_keras.weights.bilm_tf_checkpoint import (
    BilmTFCheckpoint,
    read_bilm_tf_checkpoint,
)
from bilm_keras.weights.bilm_tf_names import ADAGRAD_SUFFIX, LM_SCOPE
from bilm_keras.weights.model_detection import (
    CheckpointFileError,
    SaveDirCheckpoint,
)

#: TensorFlow's checkpoint state file, which bilm-tf's tools and ours read
STATE_FILE = "checkpoint"
#: bilm-tf's state file, set aside when our first checkpoint goes into its
#: save_dir. ``tf.train.CheckpointManager`` writes its own state file under
#: the one name ``checkpoint`` (it has no other), and on start it adopts
#: the checkpoints an existing one lists, deleting them once more than
#: ``max_to_keep`` are newer: it would delete bilm-tf's checkpoint after
#: five of ours, and on the machine that trained it (absolute paths) it
#: could. Set aside, the file keeps bilm-tf's list (its tools read it when
#: copied back as ``checkpoint``), its checkpoint files stay untouched, and
#: ours wins for every later restart, test and dump (the newest checkpoint
#: is ours; bilm-tf's is still found by name, ``--checkpoint
#: model.ckpt-N``).
BILM_TF_STATE_FILE = "checkpoint.bilm-tf"
#: the options key that says how a run treats the LSTM states at a
#: sentence start (:class:`~bilm_keras.options.BiLMOptions`)
RESET_STATES_KEY = "reset_states_at_sentence_start"


# ------------------------------------------------ restart: continue the run
def bilm_tf_run_options(save_dir: str | os.PathLike) -> BiLMOptions:
    """The options a continued bilm-tf run trains with.

    They are its ``options.json`` as bilm-tf wrote it, ``n_train_tokens``
    and all. :data:`RESET_STATES_KEY` is false unless the file sets it,
    since bilm-tf's training carried the LSTM states from batch to batch
    across sentences. A user who wants each sentence from zero states
    writes ``"reset_states_at_sentence_start": true`` into the file.

    Raises:
        OptionsError: the file is missing or invalid.
    """
    options_file = os.path.join(os.fspath(save_dir), OPTIONS_FILE)
    options = BiLMOptions.from_json(options_file)
    with open(options_file, encoding="utf-8") as f:
        says = RESET_STATES_KEY in json.load(f)
    if not says:
        options = options.replace(reset_states_at_sentence_start=False)
    return options


def restore_bilm_tf_run(found: SaveDirCheckpoint,
                        checkpoint: RunCheckpoint, *,
                        save_dir: str | os.PathLike) -> int:
    """Continues bilm-tf's run in a run's checkpoint and returns the step.

    Every weight, the softmax, each variable's accumulator and the step
    counter go exactly as bilm-tf's checkpoint holds them to
    :meth:`RunCheckpoint.continue_foreign
    <bilm_keras.training.run_checkpoint.RunCheckpoint.continue_foreign>`.
    They go as a :class:`~bilm_keras.training.run_checkpoint.ForeignRun`,
    read one tensor at a time.

    Args:
        found: the bilm-tf checkpoint, as
            :func:`~bilm_keras.weights.model_detection.locate_checkpoint`
            found it once for the run.
        checkpoint: the new run's, of the save_dir's options.

    Raises:
        CheckpointFileError: no softmax, no Adagrad accumulators or no
            ``global_step`` in the checkpoint, or shapes that do not fit the
            options. A continued run needs them all, and
            ``train --init_checkpoint`` starts a new run from its weights.
    """
    save_dir = os.fspath(save_dir)
    options_file = os.path.join(save_dir, OPTIONS_FILE)
    lm = checkpoint.lm
    new_run = "start a new run from its weights with train --init_checkpoint"
    require_softmax(found, lm.softmax.share_weights,
                     f"restart continues it; {new_run}")
    bilm_tf = read_bilm_tf_checkpoint(found, lm.backbone,
                                      softmax=lm.softmax,
                                      options_file=options_file)
    if not bilm_tf.has_accumulators:
        raise CheckpointFileError(
            f"{found.path}: holds no Adagrad accumulators (expected "
            f"'{bilm_tf.variables[0].checkpoint_name}/Adagrad'): restart "
            f"continues Adagrad from them; {new_run}")
    if bilm_tf.global_step is None:
        raise CheckpointFileError(
            f"{found.path}: holds no global_step: restart continues the "
            f"step count; {new_run}")
    return checkpoint.continue_foreign(foreign_run(bilm_tf, found))


def foreign_run(bilm_tf: BilmTFCheckpoint,
                found: SaveDirCheckpoint) -> ForeignRun:
    """bilm-tf's checkpoint as the values a run continues: each variable
    keyed by its HDF5 dataset (the softmax by its name less ``lm/``), in
    bilm-tf's layout as stored, read when used."""
    names = {}
    for entry in bilm_tf.variables:
        key = (entry.hdf5_path if entry.hdf5_path is not None
               else entry.checkpoint_name[len(LM_SCOPE):])
        names[key] = entry.checkpoint_name
    stored = _StoredTensors(bilm_tf, found.shapes, names)
    weights = _StoredTensors(bilm_tf, found.shapes, {
        key: name for key, name in names.items()
        if key not in (SOFTMAX_W_KEY, SOFTMAX_B_KEY)})
    accumulators = (_StoredTensors(bilm_tf, found.shapes, names,
                                   suffix=ADAGRAD_SUFFIX)
                    if bilm_tf.has_accumulators else None)
    return ForeignRun(source=bilm_tf.path, weights=weights,
                      softmax_weights=stored.get(SOFTMAX_W_KEY),
                      softmax_bias=stored.get(SOFTMAX_B_KEY),
                      accumulators=accumulators,
                      step=bilm_tf.global_step)


class _StoredTensor:
    """One tensor of a checkpoint: its shape now, its value when
    ``np.asarray`` asks (float32, as stored)."""

    def __init__(self, bilm_tf: BilmTFCheckpoint, name: str, shape: tuple):
        self._bilm_tf, self._name, self.shape = bilm_tf, name, shape

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._bilm_tf.read_tensor(self._name), dtype)


class _StoredTensors(Mapping):
    """``{key: _StoredTensor}`` of a checkpoint's ``names[key] +
    suffix``."""

    def __init__(self, bilm_tf: BilmTFCheckpoint, shapes: dict,
                 names: dict, suffix: str = ""):
        self._bilm_tf, self._shapes = bilm_tf, shapes
        self._names = {key: name + suffix for key, name in names.items()}

    def __getitem__(self, key):
        name = self._names[key]
        return _StoredTensor(self._bilm_tf, name, self._shapes[name])

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)


def set_aside_bilm_tf_state_file(save_dir: str | os.PathLike
                                 ) -> Optional[str]:
    """Renames bilm-tf's ``checkpoint`` state file to
    :data:`BILM_TF_STATE_FILE`, unless that is done already.

    :data:`BILM_TF_STATE_FILE` says why. Returns the new path, or None when
    there was nothing to move.
    """
    save_dir = os.fspath(save_dir)
    state = os.path.join(save_dir, STATE_FILE)
    kept = os.path.join(save_dir, BILM_TF_STATE_FILE)
    if not os.path.exists(state) or os.path.exists(kept):
        return None
    try:
        os.replace(state, kept)
    except FileNotFoundError:  # another worker of the run moved it
        return None
    return kept
