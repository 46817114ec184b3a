"""A TF1 Hub module of ELMo converted into a bilm_keras model folder:
what ``bilm-keras convert-tfhub`` runs. It sits beside the other
converters, :mod:`.paddle_conversion` and :mod:`.manylangs_conversion`.

::

    from bilm_keras.weights.tfhub_conversion import convert_tfhub
    convert_tfhub("elmo_3/", "elmo-3")
    # elmo-3/options.json, lm_weights.hdf5, mix.json

The module is read by :mod:`.tfhub_module`, the graph as a protocol
buffer, never run. A tarball of one, as tfhub.dev and Kaggle serve it,
is extracted first, safely, by
:func:`bilm_keras.pretrained.archives.extracted_model`.
"""

from __future__ import annotations

import os
from typing import Dict, Optional

from bilm_keras._utils.atomic_files import check_output_directory
from bilm_keras.weights.tfhub_module import read_tfhub_module, write_converted


def convert_tfhub(
    module: str | os.PathLike,
    outdir: str | os.PathLike,
    *,
    options_file: Optional[str | os.PathLike] = None,
    overwrite: bool = False,
) -> Dict[str, str]:
    """Converts a TF1 Hub module folder of ELMo into ``outdir``.

    Args:
        module: the module's folder (``tfhub_module.pb``,
            ``saved_model.pb``, ``variables/``).
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
        TFHubModuleError, OutputDirectoryError: one line naming the file
            and what was expected. Nothing is written.
    """
    check_output_directory(outdir, overwrite)  # before the heavy work
    found = read_tfhub_module(module, options_file=options_file)
    return write_converted(found, outdir, overwrite=overwrite)
