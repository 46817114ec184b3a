"""A TF1 Hub module of ELMo, folder or tarball, converted into a bilm_keras
model: what ``bilm-keras convert-tfhub`` runs.

::

    from bilm_keras.pretrained.tfhub_conversion import convert_tfhub
    convert_tfhub("elmo_3.tar.gz", "elmo-3")
    # elmo-3/options.json, lm_weights.hdf5, mix.json

The module is read by :mod:`bilm_keras.weights.tfhub_module`, the graph as
a protocol buffer, never run. A tarball is extracted safely first
(:mod:`.archives`) into a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import os
import tempfile
from typing import Dict, Optional

from bilm_keras.pretrained.archives import extract_archive
from bilm_keras.pretrained.errors import PretrainedModelError
from bilm_keras.weights.model_detection import (
    TFHUB_TF1,
    ModelDetectionError,
    find_model,
)


def convert_tfhub(
    module: str | os.PathLike,
    outdir: str | os.PathLike,
    *,
    options_file: Optional[str | os.PathLike] = None,
    overwrite: bool = False,
) -> Dict[str, str]:
    """Converts a TF1 Hub module of ELMo into ``outdir``.

    Args:
        module: the module's folder, or a tarball of it (``.tar.gz`` as
            tfhub.dev and Kaggle serve them).
        outdir: the directory to write: ``options.json``,
            ``lm_weights.hdf5`` and, where the module learned one,
            ``mix.json``. A non-empty one is refused unless ``overwrite``,
            and then replaced once the new one is complete.
        options_file: bilm-tf's options of the model, for what neither
            the variables' shapes nor the graph tell.
        overwrite: replace a non-empty ``outdir``.

    Returns:
        ``{"outdir", "options_file", "weight_file", "mix_file"}`` paths
        (``mix_file`` None without a mix).

    Raises:
        TFHubModuleError, PretrainedModelError, OutputDirectoryError: one
            line naming the file and what was expected. Nothing is
            written.
    """
    from bilm_keras._utils.atomic_files import check_output_directory
    from bilm_keras.weights.tfhub_module import (
        TFHubModuleError,
        read_tfhub_module,
        write_converted,
    )

    label = os.fspath(module)
    check_output_directory(outdir, overwrite)  # before the heavy work
    if os.path.isdir(label):
        found = read_tfhub_module(label, options_file=options_file)
        return write_converted(found, outdir, overwrite=overwrite)
    if not os.path.isfile(label):
        raise TFHubModuleError(
            f"{label}: expected a TF1 Hub module folder or tarball, found "
            "no such file or directory")
    with tempfile.TemporaryDirectory(prefix="bilm_tfhub.") as tmp:
        extract_archive(label, tmp, label=label)
        try:
            layout = find_model(tmp, label=label)
        except ModelDetectionError as e:
            raise PretrainedModelError(str(e)) from None
        if layout.family != TFHUB_TF1:
            raise TFHubModuleError(
                f"{label}: expected a TF1 Hub module, found a "
                f"{layout.family} model (pass it to from_pretrained or "
                "`bilm-keras embed` as it is)")
        try:
            found = read_tfhub_module(layout.model_dir,
                                      options_file=options_file)
        except TFHubModuleError as e:
            shown = (str(e).replace(tmp + ": ", "")
                     .replace(tmp + os.sep, "").replace(tmp, "."))
            raise TFHubModuleError(f"{label}: {shown}") from None
        return write_converted(found, outdir, overwrite=overwrite)
