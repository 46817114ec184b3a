"""A converted model's folder in bilm-tf's layout: ``lm_weights.hdf5``
beside ``options.json``, what every converter writes.

It imports no TensorFlow, so a conversion that needs none keeps needing
none, and no numpy or h5py until it writes.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Iterable, Tuple

from bilm_keras._utils.atomic_files import hdf5_for_writing
from bilm_keras.options import OPTIONS_FILE

if TYPE_CHECKING:  # numpy and h5py are imported where files are written:
    # the `models` command names WEIGHT_FILE and imports neither
    import numpy as np

#: the weight file's name in a model folder, as bilm-tf's tools name it
WEIGHT_FILE = "lm_weights.hdf5"


def write_model_files(folder: str | os.PathLike,
                      datasets: Iterable[Tuple[str, "np.ndarray"]],
                      options: dict) -> None:
    """Writes ``WEIGHT_FILE`` and ``OPTIONS_FILE`` into ``folder``.

    The caller makes the folder whole or not at all, e.g. with
    ``atomic_directory``.

    Args:
        folder: str. An existing folder, usually a temporary one.
        datasets: iterable of ``(hdf5_path, array)``. Each becomes one
            dataset of the weight file.
        options: dict. The model's ``options.json``.
    """
    with hdf5_for_writing(os.path.join(folder, WEIGHT_FILE)) as fout:
        for hdf5_path, value in datasets:
            fout.create_dataset(hdf5_path, data=value)
    with open(os.path.join(folder, OPTIONS_FILE), "w", encoding="utf-8",
              newline="\n") as f:
        json.dump(options, f, indent=2)
        f.write("\n")
