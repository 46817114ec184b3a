"""Cross-lingual alignment matrices: linear maps on a biLM's output layers.

Schuster et al. 2019 align each language's ELMo to English with one
matrix per output layer, learned with MUSE and published as MUSE saves
it: ``torch.save`` of a numpy array (``best_mapping.pth``), read here by
:mod:`~bilm_keras.weights.torch_pickle`'s restricted unpickler. A matrix
``W`` of shape ``(dim, dim)`` maps a layer ``h`` of shape
``(n_tokens, dim)`` to ``h @ W.T``, as MUSE's ``nn.Linear`` does and as
the publishers' ``demo.py`` computes it.

::

    from bilm_keras.weights.alignment import read_alignment
    alignment = read_alignment(["es_best_mapping.pth"], n_layers=3,
                               dim=1024)

One file maps every output layer, as AllenNLP's ``aligning_files`` maps
with one matrix after the layer mix. One file per output layer maps each
its own.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Sequence

import numpy as np

from bilm_keras.weights.torch_pickle import TorchPickleError, load_torch_file

#: the alignment file's name in a cached model's folder
ALIGNMENT_FILE = "alignment.pth"


class AlignmentError(ValueError):
    """An alignment file that is not a matrix of the model's output size,
    or the wrong number of files (one line: file, expected, found)."""


@dataclasses.dataclass(frozen=True)
class Alignment:
    """Linear maps on a biLM's output layers.

    Args:
        matrices: tuple of float32 arrays `(dim, dim)`. One maps every
            layer, else one per output layer, the token layer first.
        files: tuple of str. The files they were read from.
    """

    matrices: tuple
    files: tuple

    def for_layers(self, layer_ids: Sequence[int]) -> tuple:
        """The matrices of the layers ``layer_ids``, in their order."""
        if len(self.matrices) == 1:
            return tuple(self.matrices[0] for _ in layer_ids)
        return tuple(self.matrices[i] for i in layer_ids)


def apply_alignment(layers: np.ndarray, matrices: Sequence[np.ndarray]
                    ) -> np.ndarray:
    """Layers `(K, n_tokens, dim)` mapped each by its matrix: ``h @ W.T``.

    Args:
        layers: np.ndarray. One sentence's layers `(K, n_tokens, dim)`.
        matrices: sequence of np.ndarray. K matrices `(dim, dim)`.

    Returns:
        The mapped layers `(K, n_tokens, dim)`, in the layers' dtype.
    """
    mapped = [layer @ matrix.T.astype(layers.dtype, copy=False)
              for layer, matrix in zip(layers, matrices)]  # K x (n, dim)
    return np.stack(mapped).reshape(layers.shape)


def read_alignment_matrix(path: str | os.PathLike, dim: int) -> np.ndarray:
    """One matrix ``torch.save`` wrote, `(dim, dim)`, as float32.

    Raises:
        AlignmentError: not a torch file of one matrix, or its shape is not
            `(dim, dim)` (the file, the expected and the found shape).
    """
    path = os.fspath(path)
    try:
        matrix = load_torch_file(path)
    except (TorchPickleError, OSError) as e:
        raise AlignmentError(f"alignment {e}" if isinstance(
            e, TorchPickleError) else f"alignment {path}: {e}") from None
    if not isinstance(matrix, np.ndarray):
        raise AlignmentError(f"alignment {path}: expected a matrix, found "
                             f"{type(matrix).__name__}")
    if matrix.shape != (dim, dim) or matrix.dtype.kind != "f":
        raise AlignmentError(
            f"alignment {path}: expected a float matrix of shape "
            f"{(dim, dim)} (the model's output size), found {matrix.dtype} "
            f"{matrix.shape}")
    if not np.isfinite(matrix).all():
        raise AlignmentError(f"alignment {path}: expected finite numbers, "
                             "found NaN or infinity")
    return matrix.astype(np.float32)


def read_alignment(paths: Sequence[str | os.PathLike], *, n_layers: int,
                   dim: int) -> Alignment:
    """The alignment in ``paths``: one file for every layer, or one per
    output layer.

    Args:
        paths: sequence of paths. Matrices ``torch.save`` wrote.
        n_layers: int. The model's output layers, the token layer included.
        dim: int. Their size, ``2 * projection_dim``.

    Raises:
        AlignmentError: a file as :func:`read_alignment_matrix` says, or a
            count of files other than 1 and ``n_layers``.
    """
    paths = [os.fspath(p) for p in paths]
    if len(paths) not in (1, n_layers):
        raise AlignmentError(
            f"alignment: expected 1 file (every layer) or {n_layers} (one "
            f"per output layer), found {len(paths)}: {paths}")
    return Alignment(
        tuple(read_alignment_matrix(path, dim) for path in paths),
        tuple(paths))


def alignment_files(alignment, model_dir: str | os.PathLike | None,
                    model_name: str) -> list:
    """The files an ``alignment`` argument names.

    Args:
        alignment: ``"published"`` (the model's own ``alignment.pth``), a
            path, or a sequence of paths.
        model_dir: the model's folder, or None.
        model_name: the model's name, for the message.

    Raises:
        AlignmentError: ``"published"`` for a model without one.
    """
    if isinstance(alignment, str) and alignment == "published":
        path = (None if model_dir is None
                else os.path.join(os.fspath(model_dir), ALIGNMENT_FILE))
        if path is None or not os.path.isfile(path):
            raise AlignmentError(
                f"alignment: expected a model published with an alignment "
                f"(the xling-* models), found {model_name} without "
                f"{ALIGNMENT_FILE}; pass the matrix files instead")
        return [path]
    if isinstance(alignment, (str, os.PathLike)):
        return [os.fspath(alignment)]
    return [os.fspath(path) for path in alignment]
