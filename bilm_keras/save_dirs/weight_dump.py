"""A trained checkpoint -> bilm-tf's HDF5 weights + prediction options."""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

from bilm_keras.options import (
    N_CHARACTERS_WITH_PADDING,
    OPTIONS_FILE,
    BiLMOptions,
)
from bilm_keras.save_dirs.options_file import write_options
from bilm_keras.save_dirs.save_dir_models import run_reader
from bilm_keras.weights.model_detection import as_detected


def dump_weights(save_dir, outfile: str, *,
                 checkpoint: Optional[str] = None) -> dict:
    """Writes a checkpoint of ``save_dir`` as bilm-tf HDF5.

    The file has bilm-tf's layout, written atomically: ``char_embed``
    without the padding row, and no softmax. Token models keep
    ``embedding``. A bilm-tf save_dir's checkpoint is written as bilm-tf's
    own ``dump_weights`` wrote it, the same datasets and float32 values,
    bit for bit. A Paddle checkpoint is written as ``convert-paddle``
    writes its weights. The vocabulary is left to ``convert-paddle``.

    Beside it goes ``options.json`` for prediction. bilm-tf's
    ``dump_weights`` wrote none, and its users copied the training options
    and edited ``n_characters`` by hand. These are the training options
    with ``n_characters = 262``, as bilm-tf requires after training. A
    converted ELMoForManyLangs model keeps its own ``n_characters``. It
    gets copies of its ``char.dic``/``word.dic``, named relative to the
    options. Load both with :class:`~bilm_keras.BidirectionalLanguageModel`.

    Args:
        save_dir: str or DetectedModel. Our training's save_dir, bilm-tf's,
            or a Paddle checkpoint.
        checkpoint: the checkpoint to write (``model-200``,
            ``model.ckpt-40``). None takes the newest, which must read
            whole. A damaged newest one is refused, naming the newest that
            does, since the file would pass for the latest model.

    Returns:
        dict: ``weight_file`` and ``options_file`` written, and
        ``checkpoint``, the prefix read.
    """
    outfile = os.fspath(outfile)
    model = as_detected(save_dir, checkpoint=checkpoint)
    options, read = run_reader(model).dump(outfile)
    options_file = os.path.join(os.path.dirname(os.path.abspath(outfile)),
                                OPTIONS_FILE)
    write_options(prediction_options(options), options_file)
    return dict(weight_file=outfile, options_file=options_file,
                checkpoint=read)


def prediction_options(options: BiLMOptions) -> BiLMOptions:
    """The training options as prediction needs them: ``n_characters``
    262 for a bilm-tf char-CNN model. That loads in bilm-tf and AllenNLP
    too, and bilm_keras takes either."""
    if options.char_cnn is not None and options.manylangs is None:
        options = options.replace(char_cnn=dataclasses.replace(
            options.char_cnn, n_characters=N_CHARACTERS_WITH_PADDING))
    return options
