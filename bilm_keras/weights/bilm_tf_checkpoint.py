"""bilm-tf's TF1 training checkpoints, read into our variables' layout.

A bilm-tf ``save_dir`` holds ``options.json``, a ``checkpoint`` state file
and ``model.ckpt-N.{index,data-00000-of-00001,meta}``, written by
``tf.train.Saver``. Its variables, under ``lm/``, are named by the TF1 graph
that made them, in one of two generations.

* TF >= 1.5, bilm-tf's own runs since 2018:
  ``lm/RNN_0/rnn/multi_rnn_cell/cell_0/lstm_cell/{kernel,bias,
  projection/kernel}``.
* TF 1.2, the published training checkpoints:
  ``lm/RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/{W_0,B,W_P_0}``.

The char-CNN (``lm/char_embed``, ``lm/CNN/W_cnn_0``, ...), the token
table ``lm/embedding`` and the softmax ``lm/softmax/W`` and
``lm/softmax/b`` are named alike in both. Each variable has its Adagrad
accumulator ``<name>/Adagrad``. ``global_step``, a float32, counts the
batches.

DeepPavlov's ELMo trainer builds bilm-tf's training graph again, with TF
>= 1.5 names, ``static_rnn``, the same softmax, Adagrad slots,
``global_step`` and ``train_perplexity``. It saves it as ``saves/model``
beside ``options.json`` and ``vocab.txt``. So its LM-ready archives are
such a save_dir, read as bilm-tf's by
:func:`~bilm_keras.weights.checkpoint_files.checkpoint_dir`.

No second name table is written here. bilm-tf's ``dump_weights`` renamed
every checkpoint variable to its HDF5 dataset. The HDF5 table of
:mod:`bilm_keras.weights.bilm_tf_hdf5` already says which dataset each of
our variables is and how its layout differs: the char table's padding
row, conv1d kernels and transposed LSTM kernels. A variable's checkpoint
name is its dataset name with that renaming undone, by
:func:`~bilm_keras.weights.bilm_tf_names.checkpoint_name`, where every
bilm-tf name is defined. So the checkpoint's values are the dump's, and
go through the table's ``to_keras`` like an HDF5 file's.

Which checkpoint of a save_dir is read, and who wrote it, is told by
:func:`~bilm_keras.weights.model_detection.locate_checkpoint`, with the
families of every other format (:mod:`~bilm_keras.weights.model_detection`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import (
    Callable,
    Iterator,
    List,
    Optional,
    Tuple,
)

import numpy as np
import tensorflow as tf

from bilm_keras._utils.atomic_files import atomic_hdf5
from bilm_keras._utils.problem_list import fit_problems, problem_list
from bilm_keras.weights.bilm_tf_hdf5 import hdf5_shape, weight_table
from bilm_keras.weights.bilm_tf_names import (
    ADAGRAD_SUFFIX,
    LM_SCOPE,
    SOFTMAX_B,
    SOFTMAX_SCOPE,
    SOFTMAX_W,
    checkpoint_name,
    dataset_name,
)
from bilm_keras.weights.checkpoint_files import checkpoint_dir
from bilm_keras.weights.model_detection import (
    TF1_CHECKPOINT,
    CheckpointFileError,
    SaveDirCheckpoint,
    locate_checkpoint,
)

@dataclasses.dataclass(frozen=True)
class CheckpointVariable:
    """One of our variables and the bilm-tf checkpoint tensor that fills it.

    Attributes:
        variable: the Keras variable.
        checkpoint_name: bilm-tf's name of it (``lm/...``).
        hdf5_path: the dataset bilm-tf's ``dump_weights`` writes it to, or
            None (the softmax, which it does not write).
        to_keras: the HDF5 table's transform from bilm-tf's layout to the
            variable's.
        padding_rows: rows ``to_keras`` adds in front (the char or token
            table's padding row: 1, else 0).
    """

    variable: object
    checkpoint_name: str
    hdf5_path: Optional[str]
    to_keras: Callable
    padding_rows: int = 0

    @property
    def variable_path(self) -> str:
        return self.variable.path


@dataclasses.dataclass(frozen=True)
class BilmTFCheckpoint:
    """A bilm-tf checkpoint checked against a model. Its tensors are read
    on demand, one at a time, so that the published model's 1.6 GB softmax
    and accumulators are never held twice.

    Attributes:
        path: the checkpoint's prefix.
        generation: :data:`TF_1_5` or :data:`TF_1_2`.
        variables: one :class:`CheckpointVariable` per variable of the
            backbone, in the HDF5 table's order. When a softmax was given,
            its ``W`` follows, unless shared with the token table, then
            its ``b``.
        global_step: bilm-tf's step counter, or None if not saved.
        has_accumulators: every variable has its Adagrad accumulator.
    """

    path: str
    generation: str
    variables: Tuple[CheckpointVariable, ...]
    global_step: Optional[int]
    has_accumulators: bool

    def _reader(self):
        return tf.train.load_checkpoint(self.path)

    def _read(self, reader, name: str) -> np.ndarray:
        try:
            return np.asarray(reader.get_tensor(name), np.float32)
        except (tf.errors.OpError, RuntimeError) as e:
            raise CheckpointFileError(
                f"{self.path}: cannot read {name} "
                f"({str(e).splitlines()[0]})") from None

    def read_tensor(self, name: str) -> np.ndarray:
        """One tensor by its checkpoint name, as stored (e.g.
        ``lm/softmax/W`` for a model with another vocabulary, whose
        softmax is not in :attr:`variables`)."""
        return self._read(self._reader(), name)

    def iter_weights(self) -> Iterator[Tuple[CheckpointVariable,
                                             np.ndarray]]:
        """``(entry, value)`` per variable, the value in the variable's
        layout."""
        reader = self._reader()
        for entry in self.variables:
            yield entry, entry.to_keras(
                self._read(reader, entry.checkpoint_name))

    def read_hdf5_datasets(self) -> Iterator[Tuple[str, np.ndarray]]:
        """``(dataset name, value)`` as bilm-tf's ``dump_weights`` wrote
        them: the backbone's variables, values as stored (bilm-tf's
        layout), no softmax."""
        reader = self._reader()
        for entry in self.variables:
            if entry.hdf5_path is not None:
                yield entry.hdf5_path, self._read(reader,
                                                  entry.checkpoint_name)


# Long for its checks: every variable against the table's shape, the
# checkpoint's extra weights and the Adagrad slots, all named in one error.
def read_bilm_tf_checkpoint(
    found: SaveDirCheckpoint,
    backbone,
    *,
    options_file: str | os.PathLike,
    softmax=None,
) -> BilmTFCheckpoint:
    """Checks a bilm-tf checkpoint against a model.

    Every variable of ``backbone``, and of ``softmax``, must be in the
    checkpoint with the shape the HDF5 table gives it in bilm-tf's layout.
    Every ``lm/...`` weight of the checkpoint must have a variable.
    Nothing is read or assigned unless all fit.

    Args:
        found: the checkpoint, as
            :func:`~bilm_keras.weights.model_detection.detect_model` found
            it once for the command.
        backbone: a built :class:`~bilm_keras.models.BiLMBackbone` made
            from the save_dir's ``options.json``. The result names its
            variables, and :func:`assign_bilm_tf_checkpoint` assigns their
            values.
        softmax: the :class:`~bilm_keras.layers.sampled_softmax.
            SampledSoftmaxLoss` of a :class:`~bilm_keras.models.
            language_model.LanguageModel` over that backbone. None leaves
            ``lm/softmax/*`` aside, for the dump or an export.
        options_file: the options the model was built from, named in
            shape errors.

    Returns:
        A :class:`BilmTFCheckpoint`.

    Raises:
        CheckpointFileError: a checkpoint of ours. Or shapes that do not
            fit, naming the variable and both shapes, or variables only one
            side has.
    """
    options_file = os.fspath(options_file)
    if found.kind != TF1_CHECKPOINT:
        raise CheckpointFileError(
            f"{found.path}: a bilm_keras checkpoint, not bilm-tf's")
    wanted: List[Tuple[CheckpointVariable, tuple]] = []
    for row in weight_table(backbone):
        entry = CheckpointVariable(
            row.variable, checkpoint_name(row.hdf5_path, found.generation),
            row.hdf5_path, row.to_keras, row.keras_row_offset or 0)
        wanted.append((entry, hdf5_shape(row)))
    if softmax is not None:
        softmax_variables = [] if softmax.share_weights else [
            (SOFTMAX_W, softmax.W)]
        softmax_variables.append((SOFTMAX_B, softmax.b))
        wanted += [softmax_entry(name, variable)
                   for name, variable in softmax_variables]
    shapes = found.shapes
    # every lm/ weight needs a variable, the softmax's only with a softmax
    weights = [name for name in sorted(shapes)
               if name.startswith(LM_SCOPE)
               and not name.endswith(ADAGRAD_SUFFIX)
               and (softmax is not None
                    or not name.startswith(SOFTMAX_SCOPE))]
    problems = fit_problems({e.checkpoint_name: shape for e, shape in wanted},
                            shapes, weights)
    slots = [shapes.get(e.checkpoint_name + ADAGRAD_SUFFIX) for e, _ in wanted]
    if any(s is not None for s in slots):
        for (entry, shape), slot in zip(wanted, slots):
            # (a variable that does not fit is named once, above)
            if (slot is not None and slot != shape
                    and shapes.get(entry.checkpoint_name) == shape):
                problems.append(
                    f"{entry.checkpoint_name}{ADAGRAD_SUFFIX}: expected "
                    f"shape {shape}, checkpoint has {slot}")
    if problems:
        raise CheckpointFileError(
            f"{options_file} does not fit bilm-tf checkpoint {found.path}: "
            + problem_list(problems))
    return BilmTFCheckpoint(
        path=found.path,
        generation=found.generation,
        variables=tuple(entry for entry, _ in wanted),
        global_step=found.global_step,
        has_accumulators=all(s is not None for s in slots),
    )


def _stored_as_is(x):
    return x


def softmax_entry(name: str, variable) -> Tuple[CheckpointVariable, tuple]:
    """The softmax ``variable`` (``SOFTMAX_W`` or ``SOFTMAX_B``: ``name``)
    as ``wanted`` holds it: stored as it is, in no HDF5 table."""
    return (CheckpointVariable(variable, name, None, _stored_as_is),
            tuple(variable.shape))


def assign_bilm_tf_checkpoint(checkpoint: BilmTFCheckpoint) -> None:
    """Assigns every variable its value from the checkpoint, one at a
    time (a run's accumulators and step: :func:`bilm_keras.training.
    bilm_tf_restart.restore_bilm_tf_run`)."""
    for entry, value in checkpoint.iter_weights():
        entry.variable.assign(value)


def save_bilm_tf_dump(checkpoint: BilmTFCheckpoint,
                      outfile: str | os.PathLike) -> None:
    """Writes what bilm-tf's ``dump_weights`` wrote for this checkpoint:
    the same datasets, float32, the same values bit for bit (no softmax),
    atomically (a temporary file, then ``os.replace``)."""
    with atomic_hdf5(outfile) as fout:
        for name, value in checkpoint.read_hdf5_datasets():
            fout.create_dataset(name, data=value)


def dump_tf1_checkpoint(save_dir: str | os.PathLike,
                        outfile: str | os.PathLike) -> str:
    """Writes bilm-tf's ``dump_weights`` file of a save_dir's newest whole
    bilm-tf checkpoint without a model: every ``lm/...`` weight but the
    softmax, float32, under its dataset name, atomically.

    A published training checkpoint is made usable this way, e.g.
    DeepPavlov's LM-ready archives or a ``save_dir`` shipped beside its
    weights. Its shapes are checked against the options when the file is
    loaded.

    Returns:
        The checkpoint's prefix.

    Raises:
        CheckpointFileError: as :func:`locate_checkpoint` says, or no
            ``lm/`` weights.
    """
    # its folder directly: the caller says what it read, once
    found = locate_checkpoint(checkpoint_dir(save_dir))
    names = [name for name in sorted(found.shapes)
             if name.startswith(LM_SCOPE)
             and not name.endswith(ADAGRAD_SUFFIX)
             and not name.startswith(SOFTMAX_SCOPE)]
    if not names:
        raise CheckpointFileError(
            f"{found.path}: no 'lm/...' weights to dump")
    reader = tf.train.load_checkpoint(found.path)
    with atomic_hdf5(outfile) as fout:
        for name in names:
            try:
                value = np.asarray(reader.get_tensor(name), np.float32)
            except (tf.errors.OpError, RuntimeError) as e:
                raise CheckpointFileError(
                    f"{found.path}: cannot read {name} "
                    f"({str(e).splitlines()[0]})") from None
            fout.create_dataset(dataset_name(name, found.generation),
                                data=value)
    return found.path
