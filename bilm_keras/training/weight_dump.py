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
from bilm_keras.training.bilm_tf_save_dir import dump_bilm_tf_checkpoint
from bilm_keras.training.checkpoint_family import FoundCheckpoint
from bilm_keras.training.options_file import write_options
from bilm_keras.training.paddle_save_dir import (
    dump_paddle_checkpoint,
    locate_paddle_checkpoint,
)
from bilm_keras.training.run_checkpoint import load_trained_model
from bilm_keras.training.save_dir_models import choose_checkpoint
from bilm_keras.weights.bilm_tf_checkpoint import BILM_TF
from bilm_keras.weights.bilm_tf_hdf5 import save_bilm_tf_hdf5


def dump_weights(save_dir: str, outfile: str, *,
                 checkpoint: Optional[str] = None,
                 detected: Optional[FoundCheckpoint] = None) -> dict:
    """Writes a checkpoint of ``save_dir`` as bilm-tf HDF5.

    The file has bilm-tf's layout, written atomically: ``char_embed``
    without the padding row, and no softmax. Token models keep
    ``embedding``. A bilm-tf save_dir's checkpoint is written as bilm-tf's
    own ``dump_weights`` wrote it, the same datasets and float32 values,
    bit for bit.

    Beside it goes ``options.json`` for prediction. bilm-tf's
    ``dump_weights`` wrote none, and its users copied the training options
    and edited ``n_characters`` by hand. These are the training options
    with ``n_characters = 262``, as bilm-tf requires after training. A
    converted ELMoForManyLangs model keeps its own ``n_characters``. It
    gets copies of its ``char.dic``/``word.dic``, named relative to the
    options. Load both with :class:`~bilm_keras.BidirectionalLanguageModel`.

    A Paddle checkpoint
    (:func:`~bilm_keras.training.paddle_save_dir.locate_paddle_checkpoint`)
    is written as ``convert-paddle`` writes its weights, with its options.
    The vocabulary is left to ``convert-paddle``.

    Args:
        save_dir: our training's save_dir, bilm-tf's, or a Paddle
            checkpoint.
        checkpoint: the checkpoint to write (``model-200``,
            ``model.ckpt-40``). None takes the newest, which must read
            whole. A damaged newest one is refused, naming the newest that
            does, since the file would pass for the latest model.
        detected: FoundCheckpoint or None. ``save_dir``'s family, as
            :func:`~bilm_keras.training.checkpoint_family.detect_checkpoint`
            found it when the caller asked already. None asks here.

    Returns:
        dict: ``weight_file`` and ``options_file`` written, and
        ``checkpoint``, the prefix read.
    """
    outfile = os.fspath(outfile)
    paddle = locate_paddle_checkpoint(save_dir, detected=detected)
    if paddle is not None:
        return dump_paddle_checkpoint(paddle, outfile)
    found = choose_checkpoint(save_dir, checkpoint=checkpoint,
                              fallback=False)
    out_dir = os.path.dirname(os.path.abspath(outfile))
    if found.kind == BILM_TF:
        written = dump_bilm_tf_checkpoint(save_dir, outfile, located=found)
        options = written["options"]
    else:
        options, lm, _ = load_trained_model(save_dir, path=found.path)
        os.makedirs(out_dir, exist_ok=True)
        save_bilm_tf_hdf5(lm.backbone, outfile)
    options_file = os.path.join(out_dir, OPTIONS_FILE)
    write_options(prediction_options(options), options_file)
    return dict(weight_file=outfile, options_file=options_file,
                checkpoint=found.path)


def prediction_options(options: BiLMOptions) -> BiLMOptions:
    """The training options as prediction needs them: ``n_characters``
    262 for a bilm-tf char-CNN model. That loads in bilm-tf and AllenNLP
    too, and bilm_keras takes either."""
    if options.char_cnn is not None and options.manylangs is None:
        options = options.replace(char_cnn=dataclasses.replace(
            options.char_cnn, n_characters=N_CHARACTERS_WITH_PADDING))
    return options
