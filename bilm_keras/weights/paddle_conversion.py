"""Convert a PaddlePaddle ELMo checkpoint into a bilm_keras model.

::

    from bilm_keras.weights.paddle_conversion import convert_paddle
    convert_paddle("baike_elmo_checkpoint", "baike-elmo",
                   vocab_file="vocabulary_min5k.txt")
    # baike-elmo/options.json, lm_weights.hdf5, vocab.txt

Input, told apart by what it is (docs/paddle.md):

* a directory: a Fluid ``save_persistables`` checkpoint of upstream's
  ``PaddleNLP/ELMO``, the Chinese baike model, with word input
  (:mod:`bilm_keras.weights.paddle_baike`).
* a file: a PaddleNLP 2.x ``.pdparams``, with character input, read by
  ``bilm_keras.weights.paddlenlp_elmo.read_paddlenlp``.

Output:

* ``options.json``, with bilm-tf's keys.
* ``lm_weights.hdf5``, in bilm-tf's layout. A word-input model's token
  table is its ``embedding`` dataset. So the two files and ``vocab.txt``
  embed with ``--vocab_file OUT/vocab.txt``.
* ``vocab.txt``, the words in id order.

Everything is read and checked before anything is written. OUT is written
as a temporary sibling renamed into place, so a failure leaves OUT as it
was.
"""

from __future__ import annotations

import os
from typing import Dict, Optional

from bilm_keras._utils.atomic_files import (
    atomic_directory,
    check_output_directory,
)
from bilm_keras.options import OPTIONS_FILE
from bilm_keras.weights.model_folder import WEIGHT_FILE, write_model_files
from bilm_keras.weights.paddle_model import PaddleFormatError, PaddleModel

VOCAB_FILE = "vocab.txt"
#: where the baike model's vocabulary is published (docs/paddle.md)
BAIKE_VOCAB_HINT = (
    "vocabulary_min5k.txt from PaddlePaddle/models, on its release/1.8 "
    "branch in PaddleNLP/pretrain_language_models/ELMo/data/ "
    "(52,445 lines)")


def read_paddle(checkpoint: str | os.PathLike,
                vocab_file: Optional[str | os.PathLike] = None
                ) -> PaddleModel:
    """Either Paddle checkpoint as a :class:`PaddleModel`: a directory is
    a Fluid persistables checkpoint, a file a PaddleNLP ``.pdparams``.

    Raises:
        PaddleFormatError: not a Paddle ELMo checkpoint, or one that does
            not fit (one line naming the file, the field, the expected and
            the found value).
    """
    path = os.fspath(checkpoint)
    if os.path.isdir(path):
        from bilm_keras.weights.paddle_baike import read_baike

        return read_baike(path, vocab_file)
    if os.path.isfile(path):
        # the PaddleNLP 2.x reader (its own module, loaded on first use)
        from bilm_keras.weights.paddlenlp_elmo import read_paddlenlp

        return read_paddlenlp(path, vocab_file=vocab_file)
    raise PaddleFormatError(
        f"{path}: expected a Fluid persistables directory or a .pdparams "
        "file, found no such file or directory")


def paddle_options(checkpoint: str | os.PathLike) -> dict:
    """The ``options.json`` a Paddle checkpoint converts with (a Fluid
    directory's from its headers alone)."""
    path = os.fspath(checkpoint)
    if os.path.isdir(path):
        from bilm_keras.weights.paddle_baike import baike_checkpoint_options

        return baike_checkpoint_options(path)
    return read_paddle(path).options


def convert_paddle(
    checkpoint: str | os.PathLike,
    outdir: str | os.PathLike,
    *,
    vocab_file: Optional[str | os.PathLike] = None,
    overwrite: bool = False,
) -> Dict[str, str]:
    """Converts a Paddle ELMo checkpoint (see the module doc).

    Args:
        checkpoint: a Fluid persistables directory or a ``.pdparams`` file.
        outdir: the directory to write, created. A non-empty one is refused
            unless ``overwrite``, and then replaced once the new one is
            complete.
        vocab_file: the vocabulary: the baike model's
            ``vocabulary_min5k.txt``, or PaddleNLP's vocabulary file. The
            default is the one the checkpoint carries, if any.
        overwrite: replace a non-empty ``outdir``.

    Returns:
        ``{"outdir", "options_file", "weight_file", "vocab_file"}`` paths.

    Raises:
        PaddleFormatError: an input that does not fit, or no vocabulary.
            Nothing is written.
        OutputDirectoryError: ``outdir`` is a file, or not empty without
            ``overwrite``.
    """
    outdir = os.path.abspath(os.fspath(outdir))
    check_output_directory(outdir, overwrite)  # before the heavy work
    model = read_paddle(checkpoint, vocab_file)
    if model.vocab is None:
        hint = (BAIKE_VOCAB_HINT if model.system == "fluid-baike"
                else "the vocabulary file it was trained with")
        raise PaddleFormatError(
            f"{model.source}: vocabulary: expected one (pass vocab_file= / "
            f"--vocab_file: {hint}), found none in the checkpoint")
    write_converted(model, outdir, overwrite=overwrite)
    return {
        "outdir": outdir,
        "options_file": os.path.join(outdir, OPTIONS_FILE),
        "weight_file": os.path.join(outdir, WEIGHT_FILE),
        "vocab_file": os.path.join(outdir, VOCAB_FILE),
    }


def write_converted(model: PaddleModel, outdir: str, *,
                    overwrite: bool = False) -> None:
    """``options.json``, ``lm_weights.hdf5`` and ``vocab.txt`` (where the
    model has a vocabulary) of a read model, written whole into ``outdir``
    or not at all."""
    with atomic_directory(outdir, overwrite=overwrite) as tmp:
        write_model_files(tmp, model.lm_weights.items(), model.options)
        if model.vocab is not None:
            with open(os.path.join(tmp, VOCAB_FILE), "w", encoding="utf-8",
                      newline="\n") as f:
                f.writelines(word + "\n" for word in model.vocab)
