"""A Paddle ELMo checkpoint, read into a :class:`PaddleModel`, checked
against a model of ours: what ``--save_dir`` and ``--init_checkpoint``
take from it.

::

    from bilm_keras.weights.paddle_checkpoint import read_paddle_checkpoint
    checkpoint = read_paddle_checkpoint(paddle_model, lm.backbone,
                                        softmax=lm.softmax)
    assign_bilm_tf_checkpoint(checkpoint)      # weights and softmax
    for entry, value in checkpoint.iter_accumulators(): ...

:class:`PaddleCheckpoint` has the interface of
:class:`~bilm_keras.weights.bilm_tf_checkpoint.BilmTFCheckpoint`:
``variables``, ``iter_weights``, ``iter_accumulators``,
``read_hdf5_datasets``, ``global_step`` and ``has_accumulators``. So the
code that evaluates, dumps, exports or continues bilm-tf's checkpoints
takes a Paddle one as it is. A Paddle model is bilm-tf's once its readers
have moved its weights into bilm-tf's layout
(:mod:`bilm_keras.weights.paddle_model`). Paddle keeps no step counter
bilm-tf's way, so ``global_step`` is None.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from bilm_keras._utils.problem_list import fit_problems, problem_list
from bilm_keras.weights.bilm_tf_checkpoint import (
    CheckpointVariable,
    softmax_entry,
)
from bilm_keras.weights.bilm_tf_hdf5 import hdf5_shape, weight_table
from bilm_keras.weights.bilm_tf_names import (
    INITIAL_ACCUMULATOR,
    SOFTMAX_B,
    SOFTMAX_B_KEY,
    SOFTMAX_W,
    SOFTMAX_W_KEY,
)
from bilm_keras.weights.paddle_model import PaddleFormatError, PaddleModel

#: PaddleModel.accumulators' keys of the softmax
_SOFTMAX_KEYS = {SOFTMAX_W: SOFTMAX_W_KEY, SOFTMAX_B: SOFTMAX_B_KEY}


@dataclasses.dataclass(frozen=True)
class PaddleCheckpoint:
    """A :class:`PaddleModel` checked against a model: every variable has
    its array, of the shape the HDF5 table gives it.

    Attributes:
        path: the checkpoint (a ``.pdparams`` file or a persistables
            directory).
        model: the :class:`PaddleModel` read from it.
        variables: one :class:`CheckpointVariable` per variable of the
            backbone, in the HDF5 table's order, with the dataset name as
            ``checkpoint_name``. Then the softmax's ``W`` and ``b``, when a
            softmax was given.
        global_step: None (Paddle's checkpoints keep no step counter).
        has_accumulators: every variable has its Adagrad accumulator.
    """

    path: str
    model: PaddleModel
    variables: tuple[CheckpointVariable, ...]
    global_step: int | None = None
    has_accumulators: bool = False

    def _value(self, entry: CheckpointVariable) -> np.ndarray:
        if entry.checkpoint_name == SOFTMAX_W:
            return self.model.softmax_weight
        if entry.checkpoint_name == SOFTMAX_B:
            return self.model.softmax_bias
        return self.model.lm_weights[entry.checkpoint_name]

    def iter_weights(self) -> Iterator[tuple[CheckpointVariable,
                                             np.ndarray]]:
        """``(entry, value)`` per variable, in the variable's layout."""
        for entry in self.variables:
            yield entry, entry.to_keras(
                np.asarray(self._value(entry), np.float32))

    def iter_accumulators(self) -> Iterator[tuple[CheckpointVariable,
                                                  np.ndarray]]:
        """``(entry, Adagrad accumulator)`` per variable, in the variable's
        layout. A padding row holds :data:`INITIAL_ACCUMULATOR`."""
        if not self.has_accumulators:
            raise PaddleFormatError(
                f"{self.path}: holds no Adagrad accumulators (PaddleNLP "
                "saves them in the .pdopt beside the .pdparams; a Fluid "
                "checkpoint in <variable>_moment_0 files)")
        acc = self.model.accumulators
        for entry in self.variables:
            key = _SOFTMAX_KEYS.get(entry.checkpoint_name,
                                    entry.checkpoint_name)
            value = np.array(entry.to_keras(
                np.asarray(acc[key], np.float32)), np.float32)
            value[: entry.padding_rows] = INITIAL_ACCUMULATOR
            yield entry, value

    def read_weights(self) -> dict[str, np.ndarray]:
        """``{variable path: value}`` of every variable."""
        return {e.variable_path: v for e, v in self.iter_weights()}

    def read_accumulators(self) -> dict[str, np.ndarray]:
        """``{variable path: Adagrad accumulator}``."""
        return {e.variable_path: v for e, v in self.iter_accumulators()}

    def read_hdf5_datasets(self) -> Iterator[tuple[str, np.ndarray]]:
        """``(dataset name, value)`` of ``lm_weights.hdf5`` (no softmax)."""
        for entry in self.variables:
            if entry.hdf5_path is not None:
                yield entry.hdf5_path, np.asarray(self._value(entry),
                                                  np.float32)


def read_paddle_checkpoint(model: PaddleModel, backbone, *,
                           softmax=None) -> PaddleCheckpoint:
    """Checks a Paddle model against a built backbone (and softmax).

    Every variable of ``backbone`` must have its dataset in
    ``model.lm_weights`` with the shape the HDF5 table gives it, and every
    dataset a variable. The softmax's ``W`` ``(V, P)`` and ``b`` ``(V,)``
    must fit ``softmax``'s. Nothing is assigned: that is
    :func:`~bilm_keras.weights.bilm_tf_checkpoint.assign_bilm_tf_checkpoint`.

    Args:
        model: a :class:`PaddleModel` (either Paddle reader's).
        backbone: a built :class:`~bilm_keras.models.BiLMBackbone` made
            from ``model.options``.
        softmax: the ``SampledSoftmaxLoss`` of a ``LanguageModel`` over
            that backbone, or None to leave Paddle's softmax aside.

    Raises:
        PaddleFormatError: one line naming the checkpoint, the datasets
            whose shapes do not fit (both shapes) or that only one side
            has.
    """
    wanted = []
    for row in weight_table(backbone):
        wanted.append((CheckpointVariable(
            row.variable, row.hdf5_path, row.hdf5_path, row.to_keras,
            row.keras_row_offset or 0), hdf5_shape(row)))
    if softmax is not None:
        if softmax.share_weights:
            raise PaddleFormatError(
                f"{model.source}: softmax: expected a softmax of its own "
                "(Paddle's), found a model whose softmax shares the token "
                "table")
        wanted += [softmax_entry(SOFTMAX_W, softmax.W),
                   softmax_entry(SOFTMAX_B, softmax.b)]
    stored = {name: tuple(v.shape) for name, v in model.lm_weights.items()}
    stored[SOFTMAX_W] = tuple(model.softmax_weight.shape)
    stored[SOFTMAX_B] = tuple(model.softmax_bias.shape)
    # the softmax is left aside without a softmax: extra are the weights'
    problems = fit_problems({e.checkpoint_name: shape for e, shape in wanted},
                            stored, model.lm_weights)
    if problems:
        raise PaddleFormatError(
            f"{model.source}: does not fit the model its options describe: "
            + problem_list(problems))
    has_accumulators = bool(model.accumulators) and all(
        _SOFTMAX_KEYS.get(e.checkpoint_name, e.checkpoint_name)
        in model.accumulators for e, _ in wanted)
    return PaddleCheckpoint(path=model.source, model=model,
                            variables=tuple(e for e, _ in wanted),
                            has_accumulators=has_accumulators)
