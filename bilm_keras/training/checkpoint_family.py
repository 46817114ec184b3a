"""Which family of trained biLM a path names, told once from its files.

A ``--save_dir`` or ``--init_checkpoint`` may name a checkpoint of several
families. Each is one :class:`CheckpointFamily` row of
:data:`CHECKPOINT_FAMILIES`, tried in order:

* PaddleNLP: a ``.pdparams`` file, the file without its suffix, or its
  run's save_dir;
* Paddle Fluid: a persistables directory, the baike model;
* a TensorFlow save_dir: ours or bilm-tf's, in either TF1 generation of
  its names, DeepPavlov's LM-ready folders among them. Its checkpoint's
  variable names tell the writer when it is opened
  (:func:`~bilm_keras.training.run_checkpoint.locate_run_checkpoint`),
  which needs TensorFlow.

:func:`detect_checkpoint` reads file names only, no TensorFlow, so
``bilm-keras train`` calls it before TensorFlow is imported. A family told
by its files, such as a TF1 Hub module's folder, is one more row here: how
its path is found, and the options it carries. A writer of TensorFlow
checkpoints told by other variable names is one more ``CheckpointKind``
beside ours (:data:`~bilm_keras.training.run_checkpoint.RUN_CHECKPOINT`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Optional

from bilm_keras.options import OPTIONS_FILE


@dataclasses.dataclass(frozen=True)
class CheckpointFamily:
    """One family of trained biLMs a path may name.

    Attributes:
        name: str. What a message calls the family.
        locate: callable. ``path -> str or None``, the checkpoint ``path``
            names in this family, from file names alone.
        converted_options: callable or None. ``located -> dict``, the
            options of a checkpoint that holds no ``options.json``. None:
            the ``options.json`` in its folder.
        paddle: bool. Read through the Paddle readers
            (:mod:`bilm_keras.training.paddle_adaptation`), else as a
            TensorFlow checkpoint.
    """

    name: str
    locate: Callable[[str], Optional[str]]
    converted_options: Optional[Callable[[str], dict]] = None
    paddle: bool = False


@dataclasses.dataclass(frozen=True)
class FoundCheckpoint:
    """A path's checkpoint and its family.

    Attributes:
        family: CheckpointFamily. The row that recognised it.
        path: str. What the row's ``locate`` returned.
        given: str. The path as given.
    """

    family: CheckpointFamily
    path: str
    given: str

    @property
    def options_file(self) -> Optional[str]:
        """str or None. The ``options.json`` beside the checkpoint, None
        for a family whose options are converted."""
        if self.family.converted_options is not None:
            return None
        return os.path.join(self.path, OPTIONS_FILE)

    def converted_options(self) -> dict:
        """dict. The options of a family that holds no ``options.json``."""
        return self.family.converted_options(self.path)


def _pdparams(path: str) -> Optional[str]:
    from bilm_keras.weights.paddlenlp_elmo import locate_pdparams

    return locate_pdparams(path)


def _fluid(path: str) -> Optional[str]:
    from bilm_keras.weights.paddle_baike import is_baike_checkpoint

    if os.path.isdir(path) and is_baike_checkpoint(os.listdir(path)):
        return path
    return None


def _tensorflow_save_dir(path: str) -> Optional[str]:
    return path if os.path.isdir(path) else None


def _paddle_options(path: str) -> dict:
    from bilm_keras.weights.paddle_conversion import paddle_options

    return paddle_options(path)


PADDLENLP = CheckpointFamily("PaddleNLP", _pdparams, _paddle_options,
                             paddle=True)
PADDLE_FLUID = CheckpointFamily("Paddle Fluid", _fluid, _paddle_options,
                                paddle=True)
TENSORFLOW_SAVE_DIR = CheckpointFamily("TensorFlow save_dir",
                                       _tensorflow_save_dir)

#: the families, in the order they are tried: the first that locates a
#: checkpoint names it
CHECKPOINT_FAMILIES = (PADDLENLP, PADDLE_FLUID, TENSORFLOW_SAVE_DIR)


def detect_checkpoint(path: str | os.PathLike) -> Optional[FoundCheckpoint]:
    """The checkpoint ``path`` names and its family, else None.

    Reads file names only. A TensorFlow save_dir is any folder no other
    family claims: whether it holds a checkpoint is known when it is
    read.

    Raises:
        PaddleFormatError: a folder of several ``.pdparams``, none of them
            ``final`` or a step number.
    """
    given = os.fspath(path)
    for family in CHECKPOINT_FAMILIES:
        located = family.locate(given)
        if located is not None:
            return FoundCheckpoint(family, located, given)
    return None
