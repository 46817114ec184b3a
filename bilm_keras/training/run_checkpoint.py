"""What a training checkpoint holds, defined once: :class:`RunCheckpoint`.

A run's checkpoint (``save_dir/model-STEP``, written by
:class:`~bilm_keras.training.checkpoints.CheckpointWriter`) holds these
parts, by these names (:data:`PARTS`):

=====================  ====================================================
``weights``            every variable of the :class:`LanguageModel`, by its
                       Keras path (``/`` written ``:``): the names are the
                       layers' own, independent of how objects nest
``optimizer``          Adagrad: its accumulators and its step counter
``data_stream``        where the training data stands
                       (:class:`~bilm_keras.training.checkpoints.DataStream`)
``lstm_states``        the LSTM states the next step starts from
                       (:class:`~bilm_keras.training.carried_states.
                       CarriedStates`), for the run's global batch
``lm_frozen_until``    the warm-up's end (:class:`~bilm_keras.training.
                       lm_warmup.LMWarmup`)
=====================  ====================================================

A checkpoint written before the last three existed (or with the states of
another batch size) restores without them: a new data stream, zero
states, no warm-up. :class:`RunCheckpoint` builds the
``tf.train.Checkpoint`` of a run once, restores ours into it (each part's
variables checked against the options first), continues a run another
implementation saved (:class:`ForeignRun`: bilm-tf's TF1 checkpoints,
:mod:`bilm_keras.training.bilm_tf_restart`; Paddle's to come) and makes
the run's :class:`~bilm_keras.training.checkpoints.CheckpointWriter`.
:mod:`~bilm_keras.weights.model_detection` tells ours from bilm-tf's by
the ``weights`` part.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional

import numpy as np
import tensorflow as tf

from bilm_keras._utils.problem_list import fit_problems, problem_list
from bilm_keras._utils.settings import is_int
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.training.carried_states import CarriedStates
from bilm_keras.training.checkpoints import (
    CheckpointWriter,
    DataStream,
    checkpoint_bytes,
)
from bilm_keras.save_dirs.our_run import CheckpointError
from bilm_keras.training.lm_warmup import LMWarmup
from bilm_keras.weights.bilm_tf_hdf5 import hdf5_shape, weight_table
from bilm_keras.weights.bilm_tf_names import (  # the softmax's keys in
    INITIAL_ACCUMULATOR,  # ForeignRun.accumulators
    SOFTMAX_B_KEY,
    SOFTMAX_W_KEY,
)
from bilm_keras.save_dirs.our_run import (
    model_weights,
    restore_checkpoint,
)
from bilm_keras.weights.model_detection import WEIGHTS

#: the parts of a run's checkpoint, by their names in it (``weights``
#: named where every family is told apart, :mod:`~bilm_keras.weights.
#: model_detection`)
OPTIMIZER = "optimizer"
DATA_STREAM = "data_stream"
LSTM_STATES = "lstm_states"
LM_FROZEN_UNTIL = "lm_frozen_until"
PARTS = (WEIGHTS, OPTIMIZER, DATA_STREAM, LSTM_STATES, LM_FROZEN_UNTIL)

@dataclasses.dataclass(frozen=True)
class ForeignRun:
    """A training run another implementation saved, as values in
    bilm-tf's layout.

    :meth:`RunCheckpoint.continue_foreign` continues it: every weight, the
    softmax, Adagrad's accumulators and the step. bilm-tf's TF1
    checkpoints are read into one by
    :func:`~bilm_keras.training.bilm_tf_restart.restore_bilm_tf_run`. A
    reader of another format builds one from its arrays.

    ``V`` = ``n_tokens_vocab``, ``P`` = ``projection_dim``. A value is
    anything ``np.asarray`` reads as float32 and that has a ``.shape``.
    Numpy arrays do, and so do entries read on demand, so that a 1.6 GB
    softmax is never held twice.

    Fields:
        source: str. The checkpoint's path, named in errors.
        weights: ``{HDF5 dataset path: value}`` of every dataset of the
            model's :func:`~bilm_keras.weights.bilm_tf_hdf5.weight_table`,
            and no other. Names and layout are those of bilm-tf's
            ``lm_weights.hdf5``. E.g. ``"char_embed"`` is
            `(n_characters - 1, char_dim)` without the padding row, and
            ``"CNN/W_cnn_0"`` is `(1, width, char_dim, filters)`.
            ``"RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"`` is
            `(input_dim + projection_dim, 4 * lstm_dim)`, gates i, j, f, o.
        softmax_weights: `(V, P)`. The softmax's ``W``. None when the
            softmax shares the token table, ``share_embedding_softmax``.
        softmax_bias: `(V,)`, its ``b``.
        accumulators: Adagrad's accumulator of each value, under the same
            keys, the softmax's under :data:`SOFTMAX_W_KEY` and
            :data:`SOFTMAX_B_KEY`. None means none saved, and continuing a
            run needs them.
        step: int >= 0 or None. The global step, i.e. batches trained.
            None means not saved.
    """

    source: str
    weights: Mapping[str, Any]
    softmax_weights: Optional[Any]
    softmax_bias: Any
    accumulators: Optional[Mapping[str, Any]]
    step: Optional[int]


@dataclasses.dataclass(frozen=True)
class _Target:
    """A variable a :class:`ForeignRun` fills: its key there, its value's
    shape there, the table's transform and the padding rows it adds."""

    key: str
    variable: Any
    shape: tuple
    to_keras: Any
    padding_rows: int = 0


class RunCheckpoint:
    """Everything a training checkpoint holds, for one run, in one
    ``tf.train.Checkpoint`` built once.

    That is the model's weights, the optimizer with Adagrad's accumulators
    and the step, the data stream, the carried LSTM states and the
    warm-up's end. The module doc has the names.

    Args:
        lm: the built :class:`LanguageModel`.
        optimizer: its built Adagrad, a
            :class:`~bilm_keras.training.adagrad.RowSparseAdagrad`.
        batch_size: the global batch, i.e. the carried states' rows.
        freeze_lm_steps: the warm-up of a new adapted run. A restored one
            takes its checkpoint's.

    Attributes:
        checkpoint: the ``tf.train.Checkpoint`` a writer saves.
        stream: the :class:`~bilm_keras.training.checkpoints.DataStream`.
        warmup: the :class:`~bilm_keras.training.lm_warmup.LMWarmup`.
        carried: the :class:`~bilm_keras.training.carried_states.
            CarriedStates`.
        restored: the parts :meth:`restore` restored from ours. Empty
            for a new run or a foreign one.
    """

    def __init__(self, lm: LanguageModel, optimizer, *, batch_size: int,
                 freeze_lm_steps: int = 0):
        self.lm, self.optimizer = lm, optimizer
        self.stream = DataStream()
        self.warmup = LMWarmup(freeze_lm_steps)
        self.carried = CarriedStates(lm, batch_size)
        self.checkpoint = tf.train.Checkpoint(**self._parts(PARTS))
        self.restored = frozenset()

    def _parts(self, names) -> dict:
        """The objects of the parts ``names``."""
        objects = {
            WEIGHTS: model_weights(self.lm),
            OPTIMIZER: self.optimizer,
            DATA_STREAM: self.stream.variables,
            LSTM_STATES: self.carried.variables,
            LM_FROZEN_UNTIL: self.warmup.until,
        }
        return {name: objects[name] for name in names}

    @property
    def variables(self) -> list:
        """The variables a checkpoint holds (for its size)."""
        return [*self.lm.variables, *self.optimizer.variables,
                *self.carried.variables.values()]

    def saved_parts(self, path: str) -> frozenset:
        """The parts the checkpoint at ``path`` holds that this run can
        restore. The weights and the optimizer always, the data stream
        and the warm-up when saved. The LSTM states when saved for this
        global batch, as another batch size starts from zero states."""
        shapes = tf.train.list_variables(path)
        saved = {name.split("/", 1)[0] for name, _ in shapes}
        parts = {WEIGHTS, OPTIMIZER} | (saved & {DATA_STREAM,
                                                 LM_FROZEN_UNTIL})
        states = [shape for name, shape in shapes
                  if name.startswith(LSTM_STATES + "/")]
        if states and all(s[0] == self.carried.batch_size for s in states):
            parts.add(LSTM_STATES)
        return frozenset(parts)

    def restore(self, save_dir: str, path: str) -> str:
        """Restores our checkpoint at ``path`` (of ``save_dir``): the parts
        it holds (:meth:`saved_parts`, kept as :attr:`restored`), the
        weights checked against the options first. Returns the path.

        Raises:
            CheckpointError: its variables do not fit the options.
        """
        parts = self.saved_parts(path)
        # a root of the saved parts alone: the others keep their values
        # (restoring into a part the file lacks would fail the match)
        root = tf.train.Checkpoint(**self._parts(
            [name for name in PARTS if name in parts]))
        path = restore_checkpoint(root, self.lm, save_dir, path=path)
        self.restored = parts
        return path

    def continue_foreign(self, run: ForeignRun) -> int:
        """Continues a run another implementation saved, in our layout.

        It takes every weight and the softmax, each variable's Adagrad
        accumulator and the step counter. A padding row the table adds
        gets bilm-tf's initial
        :data:`~bilm_keras.weights.bilm_tf_names.INITIAL_ACCUMULATOR`.
        Every shape is checked before anything is assigned. Returns the
        step.

        Raises:
            CheckpointError: a value missing, of another shape or with no
                variable, or no accumulators or no step. It names
                ``run.source``.
        """
        targets = self._foreign_targets()
        self._check_foreign(run, targets)
        for target in targets:  # one value in memory at a time
            target.variable.assign(target.to_keras(np.asarray(
                _foreign_value(run, target.key), np.float32)))
        for target in targets:
            value = target.to_keras(np.asarray(run.accumulators[target.key],
                                               np.float32))
            value[: target.padding_rows] = INITIAL_ACCUMULATOR
            self.optimizer.set_accumulator(target.variable, value)
        self.optimizer.iterations.assign(run.step)
        return run.step

    def _foreign_targets(self) -> list:
        """The variables a :class:`ForeignRun` fills, in the table's order,
        then the softmax's."""
        targets = [_Target(row.hdf5_path, row.variable, hdf5_shape(row),
                           row.to_keras, row.keras_row_offset or 0)
                   for row in weight_table(self.lm.backbone)]
        softmax = self.lm.softmax
        if not softmax.share_weights:
            targets.append(_Target(SOFTMAX_W_KEY, softmax.W,
                                   tuple(softmax.W.shape), _as_is))
        targets.append(_Target(SOFTMAX_B_KEY, softmax.b,
                               tuple(softmax.b.shape), _as_is))
        return targets

    @staticmethod
    def _check_foreign(run: ForeignRun, targets) -> None:
        expected = {target.key: target.shape for target in targets}
        stored = {key: _shape(_foreign_value(run, key))
                  for key in {*expected, *run.weights}}
        problems = fit_problems(expected, stored, sorted(run.weights))
        if run.accumulators is None:
            problems.append("no Adagrad accumulators (continuing a run "
                            "needs them)")
        else:
            suffix = " Adagrad accumulator"
            problems += fit_problems(
                {key + suffix: shape for key, shape in expected.items()},
                {key + suffix: _shape(run.accumulators.get(key))
                 for key in expected}, extra=())
        if not is_int(run.step) or run.step < 0:
            problems.append(f"step: expected an integer >= 0, found "
                            f"{run.step!r}")
        if problems:
            raise CheckpointError(
                f"{run.source} does not fit the model: "
                + problem_list(problems))

    def writer(self, directory: str, *, max_to_keep: int,
               strategy: tf.distribute.Strategy) -> CheckpointWriter:
        """The run's writer into ``directory``: the LSTM states are
        captured from the replicas before each save."""
        return CheckpointWriter(
            self.checkpoint, directory, max_to_keep=max_to_keep,
            n_bytes=checkpoint_bytes(self.variables),
            before_save=lambda: self.carried.capture(strategy))


def _foreign_value(run: ForeignRun, key: str):
    """The value of ``key`` in ``run`` (None: not there)."""
    if key == SOFTMAX_W_KEY:
        return run.softmax_weights
    if key == SOFTMAX_B_KEY:
        return run.softmax_bias
    return run.weights.get(key)


def _shape(value) -> Optional[tuple]:
    """The shape of a foreign value, None for none."""
    return None if value is None else tuple(np.shape(value))


def _as_is(value):
    return value
