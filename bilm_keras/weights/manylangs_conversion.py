"""Convert an ELMoForManyLangs model directory into a bilm_keras model.

::

    from bilm_keras.weights.manylangs_conversion import convert_manylangs
    convert_manylangs("zhs.model", "zhs-elmo")
    # zhs-elmo/options.json, lm_weights.hdf5, char.dic, word.dic

Input: a model directory as HIT-SCIR/ELMoForManyLangs releases it:

* ``config.json``. Its ``config_path`` names the model configuration,
  resolved as upstream does (:mod:`bilm_keras.weights.manylangs_config`).
* ``char.dic`` and ``word.dic``
  (:mod:`bilm_keras.data.manylangs_dictionaries`).
* ``token_embedder.pkl`` and ``encoder.pkl``, PyTorch state dicts, often
  in torch 0.4's legacy serialization. They are read without torch by
  :mod:`bilm_keras.weights.torch_pickle`.

Output:

* ``options.json``: bilm-tf's layout plus an ``elmoformanylangs`` section
  naming the dictionaries relative to itself.
* ``lm_weights.hdf5``: bilm-tf's layout, the weights transformed by the
  table in :mod:`bilm_keras.weights.manylangs_pkl`.
* the dictionaries, copied byte for byte.

Everything is checked before anything is written. OUT is written as a
temporary sibling renamed into place, so a failure leaves OUT as it was,
or not created.

The ``.pkl`` files are read by a restricted unpickler that rebuilds tensors
and dicts only: a model file can hold tensors, never code, and PyTorch is
not needed.
"""

from __future__ import annotations

import os
import shutil
from typing import Dict

import numpy as np

from bilm_keras._utils.atomic_files import (
    atomic_directory,
    check_output_directory,
)
from bilm_keras.data.manylangs_dictionaries import read_char_dic, read_word_dic
from bilm_keras.options import OPTIONS_FILE
from bilm_keras.weights.manylangs_config import (
    ManyLangsModelConfig,
    read_model_config,
)
from bilm_keras.weights.manylangs_pkl import (
    ENCODER_PKL,
    TOKEN_EMBEDDER_PKL,
    ManyLangsSizes,
    ManyLangsWeightError,
    convert_state_dicts,
)
from bilm_keras.weights.model_folder import WEIGHT_FILE, write_model_files
from bilm_keras.weights.torch_pickle import (
    TorchPickleError,
    read_torch_state_dict,
)

CHAR_DIC = "char.dic"
WORD_DIC = "word.dic"

def manylangs_options(config: ManyLangsModelConfig, *, n_chars: int,
                      n_words: int) -> dict:
    """The ``options.json`` of a converted model.

    Args:
        config: the upstream model configuration.
        n_chars: rows of char.dic (the char table).
        n_words: rows of word.dic (0 without a word part).
    """
    return {
        "lstm": {
            "dim": config.lstm_dim,
            "projection_dim": config.projection_dim,
            "n_layers": config.n_layers,
            "cell_clip": config.cell_clip,
            "proj_clip": config.proj_clip,
            # upstream adds each layer's input to layers >= 1's outputs
            "use_skip_connections": True,
        },
        "char_cnn": {
            "embedding": {"dim": config.char_dim},
            "filters": [list(pair) for pair in config.filters],
            "n_highway": config.n_highway,
            # row 0 is the padding id of the +1-shifted char ids
            "n_characters": n_chars + 1,
            "max_characters_per_token": config.max_characters_per_token,
            "activation": config.activation,
        },
        "elmoformanylangs": {
            "char_dic": CHAR_DIC,
            "word_dic": WORD_DIC if config.word_dim else None,
            "word_embedding_dim": config.word_dim,
            "n_words": n_words,
        },
        "bidirectional": True,
        "dropout": config.dropout,
    }


def read_state_dict(path: str) -> Dict[str, np.ndarray]:
    """A ``.pkl`` state dict (legacy or zip serialization) as float32 numpy
    arrays (released files may name ``cuda:N`` storages: read all the same).

    Raises:
        ManyLangsWeightError: not a state dict of floating-point tensors.
    """
    try:
        state = read_torch_state_dict(path)
    except TorchPickleError as e:
        raise ManyLangsWeightError(str(e)) from None
    arrays = {}
    for key, value in state.items():
        if not np.issubdtype(value.dtype, np.floating):
            raise ManyLangsWeightError(
                f"{path}: key {key!r}: expected a floating-point tensor, "
                f"found dtype {value.dtype}")
        # bilm-tf's HDF5 layout is float32 (a no-op for released files)
        arrays[key] = value.astype(np.float32, copy=False)
    return arrays


def convert_manylangs(
    model_dir: str | os.PathLike,
    outdir: str | os.PathLike,
    *,
    overwrite: bool = False,
) -> Dict[str, str]:
    """Converts an ELMoForManyLangs model directory (see the module doc).

    Args:
        model_dir: the released model directory.
        outdir: the directory to write, created. A non-empty one is
            refused unless ``overwrite``, and then replaced once the new
            one is complete.
        overwrite: replace a non-empty ``outdir``.

    Returns:
        ``{"outdir", "options_file", "weight_file"}`` paths.

    Raises:
        ManyLangsConfigError, ManyLangsDictionaryError, ManyLangsWeightError:
            an input that does not fit, named by file, field, expected and
            found. All are ``ValueError``. Nothing is written.
        OutputDirectoryError: ``outdir`` is a file, or not empty without
            ``overwrite``.
    """
    model_dir = os.fspath(model_dir)
    outdir = os.path.abspath(os.fspath(outdir))
    check_output_directory(outdir, overwrite)  # before the heavy work
    # everything that is cheap to check, before the big files
    config = read_model_config(model_dir)
    char_dic = os.path.join(model_dir, CHAR_DIC)
    word_dic = os.path.join(model_dir, WORD_DIC)
    n_chars = len(read_char_dic(char_dic))
    n_words = len(read_word_dic(word_dic)) if config.word_dim else 0
    pkl = {name: os.path.join(model_dir, name)
           for name in (TOKEN_EMBEDDER_PKL, ENCODER_PKL)}
    for path in pkl.values():
        if not os.path.isfile(path):
            raise ManyLangsWeightError(
                f"{path}: expected the model's state dict, found no such "
                "file")
    sizes = ManyLangsSizes(
        n_chars=n_chars, char_dim=config.char_dim, filters=config.filters,
        n_highway=config.n_highway, n_words=n_words,
        word_dim=config.word_dim, projection_dim=config.projection_dim,
        lstm_dim=config.lstm_dim, n_layers=config.n_layers)
    state_dicts = {name: read_state_dict(path) for name, path in pkl.items()}
    datasets = convert_state_dicts(state_dicts, sizes, sources=pkl)
    options = manylangs_options(config, n_chars=n_chars, n_words=n_words)

    with atomic_directory(outdir, overwrite=overwrite) as tmp:
        write_model_files(tmp, datasets, options)
        shutil.copyfile(char_dic, os.path.join(tmp, CHAR_DIC))
        if config.word_dim:
            shutil.copyfile(word_dic, os.path.join(tmp, WORD_DIC))
    return {
        "outdir": outdir,
        "options_file": os.path.join(outdir, OPTIONS_FILE),
        "weight_file": os.path.join(outdir, WEIGHT_FILE),
    }
