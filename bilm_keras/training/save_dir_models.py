"""A save_dir's checkpoint, ours or bilm-tf's, chosen and loaded for a
command: ``test``, ``dump-weights``, ``export-hub --save_dir`` or
``restart``. The reading commands also take a Paddle checkpoint, see
:mod:`bilm_keras.training.paddle_save_dir`.

Who wrote a checkpoint is told from its variable names. Which one is used
is told from its files by
:func:`~bilm_keras.training.run_checkpoint.locate_run_checkpoint`: the
newest that reads whole. Newer ones may not, with a ``.index`` or
``.data`` file missing or cut short. A command that reads the model, such
as ``test`` or ``restart``, then says so in one line and uses the newest
whole one. A command that writes the model out for others, such as
``dump-weights`` or ``export-hub``, refuses, naming both, unless the user
names a checkpoint. Its output would otherwise pass for the latest model.
"""

from __future__ import annotations

import logging
import os
from typing import Optional

from bilm_keras.options import BiLMOptions
from bilm_keras.training.bilm_tf_save_dir import load_bilm_tf_language_model
from bilm_keras.training.checkpoint_family import FoundCheckpoint
from bilm_keras.options import OPTIONS_FILE
from bilm_keras.training.inputs import check_vocab_fits, load_vocab
from bilm_keras.training.paddle_save_dir import (
    load_paddle_language_model,
    locate_paddle_checkpoint,
)
from bilm_keras.training.run_checkpoint import (
    load_trained_model,
    locate_run_checkpoint,
)
from bilm_keras.weights.bilm_tf_checkpoint import BILM_TF, SaveDirCheckpoint

logger = logging.getLogger(__name__)


def choose_checkpoint(save_dir: str | os.PathLike, *,
                      checkpoint: Optional[str] = None,
                      fallback: bool = True,
                      located: Optional[SaveDirCheckpoint] = None
                      ) -> SaveDirCheckpoint:
    """The checkpoint of ``save_dir`` a command uses.

    Args:
        checkpoint: the one the user named, e.g. ``model-200``. None takes
            the newest that reads whole.
        fallback: bool. True passes over damaged newer checkpoints, saying
            so in one line on stderr. False refuses them, in one line
            naming the damaged one and the newest whole one.
        located: the checkpoint the caller located already. Only its
            passed-over newer ones are said.

    Raises:
        CheckpointFileError: see :func:`locate_checkpoint`.
        SettingError: no checkpoint of that name, for field
            ``checkpoint``.
    """
    found = located if located is not None else locate_run_checkpoint(
        save_dir, checkpoint=checkpoint, fallback=fallback)
    note = found.fallback_note()
    if note is not None:
        logger.warning(note)
    return found


def load_save_dir_model(save_dir: str | os.PathLike, *,
                        vocab_file=None,
                        checkpoint: Optional[str] = None,
                        fallback: bool = True,
                        detected: Optional[FoundCheckpoint] = None
                        ) -> tuple:
    """A save_dir's checkpoint as an inference :class:`LanguageModel`,
    without dropout, softmax included.

    Whoever wrote it is read: ours, bilm-tf's, or Paddle's. Paddle's is a
    persistables directory, a PaddleNLP ``.pdparams`` or its run's
    save_dir, see :func:`~bilm_keras.training.paddle_save_dir.
    locate_paddle_checkpoint`.

    Args:
        vocab_file: the model's vocabulary, loaded and checked against the
            options' ``n_tokens_vocab``. None means no vocabulary. For a
            Paddle checkpoint, it is the file Paddle read, PaddleNLP's
            words-only one.
        checkpoint, fallback: see :func:`choose_checkpoint`. Not for a
            Paddle checkpoint, which is one.
        detected: FoundCheckpoint or None. ``save_dir``'s family, as
            :func:`~bilm_keras.training.checkpoint_family.detect_checkpoint`
            found it when the caller asked already. None asks here.

    Returns:
        ``(options, lm, vocab, found)``. The save_dir's options, the
        model, the vocabulary or None, and the
        :class:`~bilm_keras.weights.bilm_tf_checkpoint.SaveDirCheckpoint`
        read. For Paddle's it is a :class:`~bilm_keras.weights.
        paddle_checkpoint.PaddleCheckpoint`. Both have ``path``.

    Raises:
        CheckpointFileError, CheckpointError: a checkpoint that cannot be
            read or does not fit the options.
        OptionsError: a vocabulary of another size.
    """
    save_dir = os.fspath(save_dir)
    paddle = locate_paddle_checkpoint(save_dir, detected=detected)
    if paddle is not None:
        return load_paddle_language_model(paddle, vocab_file=vocab_file)
    found = choose_checkpoint(save_dir, checkpoint=checkpoint,
                              fallback=fallback)
    if found.kind != BILM_TF:
        options, lm, vocab = load_trained_model(save_dir,
                                                vocab_file=vocab_file,
                                                path=found.path)
        return options, lm, vocab, found
    options_file = os.path.join(save_dir, OPTIONS_FILE)
    options = BiLMOptions.from_json(options_file)
    vocab = None
    if vocab_file is not None:  # before the model: a wrong file fails fast
        vocab = load_vocab(vocab_file, options)
        check_vocab_fits(options, vocab, vocab_file, options_file)
    _, lm, _ = load_bilm_tf_language_model(save_dir, located=found,
                                           options=options)
    return options, lm, vocab, found
