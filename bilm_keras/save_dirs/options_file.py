"""The ``options.json`` a run or a weight dump writes, with the files it names.

A converted ELMoForManyLangs model's options name its ``char.dic`` and
``word.dic`` relative to the options file's folder. A training ``save_dir``
and a ``dump_weights`` folder get copies of both beside their
``options.json``, which names them by file name. So the folder is complete
on its own, as the converted folder was. It can be moved, exported or
loaded anywhere.
"""

from __future__ import annotations

import dataclasses
import os
import shutil

from bilm_keras._utils.atomic_files import atomic_path
from bilm_keras.options import BiLMOptions


def write_options(options: BiLMOptions,
                  options_file: str | os.PathLike) -> BiLMOptions:
    """Writes ``options_file`` and copies the dictionaries it names.

    Args:
        options: the options to write. A converted ELMoForManyLangs
            model's dictionaries (``options.manylangs``) are copied byte for
            byte into the folder of ``options_file``, each atomically. A
            file that is already the same one is left alone.
        options_file: the ``options.json`` to write, atomically.

    Returns:
        The options as written, their dictionaries resolved to the copies.
    """
    options_file = os.path.abspath(os.fspath(options_file))
    folder = os.path.dirname(options_file)
    manylangs = options.manylangs
    if manylangs is None:
        options.to_json(options_file)
        return options
    os.makedirs(folder, exist_ok=True)
    names, copies = {}, {}
    for field in ("char_dic", "word_dic"):
        source = getattr(manylangs, field)
        if source is None:
            continue
        name = os.path.basename(source)
        target = os.path.join(folder, name)
        if not (os.path.exists(target) and os.path.samefile(source, target)):
            with atomic_path(target) as tmp:
                shutil.copyfile(source, tmp)
        names[field], copies[field] = name, target
    # relative names in the file: the folder stands on its own
    options.replace(
        manylangs=dataclasses.replace(manylangs, **names)
    ).to_json(options_file)
    return options.replace(manylangs=dataclasses.replace(manylangs, **copies))
