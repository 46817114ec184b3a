"""A trained run read for a command, whoever wrote it: ``test``,
``dump-weights``, ``export-hub --save_dir``.

The run is a :class:`~bilm_keras.weights.model_detection.DetectedModel`:
ours, bilm-tf's (either generation, DeepPavlov's among them) or Paddle's.
:func:`run_reader` branches on its family, here alone, and every command
asks the reader it returns. The checkpoint used is the one detection
chose: the newest that reads whole, or the one the user named. Newer ones
may not read whole, with a ``.index`` or ``.data`` file missing or cut
short. A command that reads the model, such as ``test``, says so in one
line and uses the newest whole one. A command that writes the model out
for others, such as ``dump-weights`` or ``export-hub``, refuses, naming
both, unless the user names a checkpoint. Its output would otherwise pass
for the latest model.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Optional

from bilm_keras.options import OPTIONS_FILE, BiLMOptions
from bilm_keras.save_dirs.bilm_tf_run import (
    dump_bilm_tf_checkpoint,
    load_bilm_tf_language_model,
)
from bilm_keras.data.vocab_for_options import check_vocab_fits, load_vocab
from bilm_keras.save_dirs.paddle_run import (
    dump_paddle_checkpoint,
    load_paddle_language_model,
)
from bilm_keras.save_dirs.our_run import load_trained_model
from bilm_keras.weights.bilm_tf_hdf5 import save_bilm_tf_hdf5
from bilm_keras.weights.model_detection import (
    OUR_RUN,
    TF1_CHECKPOINT,
    DetectedModel,
    ModelDetectionError,
    as_detected,
)

logger = logging.getLogger(__name__)


def load_save_dir_model(save_dir, *, vocab_file=None,
                        checkpoint: Optional[str] = None) -> tuple:
    """A trained run's checkpoint as an inference :class:`LanguageModel`,
    without dropout, softmax included.

    Args:
        save_dir: str or DetectedModel. Our training's save_dir, bilm-tf's,
            or a Paddle checkpoint: a persistables directory, a PaddleNLP
            ``.pdparams`` or its run's save_dir.
        vocab_file: the model's vocabulary, loaded and checked against the
            options' ``n_tokens_vocab``. None means no vocabulary. For a
            Paddle checkpoint, it is the file Paddle read, PaddleNLP's
            words-only one.
        checkpoint: the checkpoint to read (``model-200``). None takes
            the newest that reads whole, naming damaged newer ones in a
            line. Not for a Paddle checkpoint, which is one.

    Returns:
        ``(options, lm, vocab, found)``. The run's options, the model, the
        vocabulary or None, and the checkpoint read: a
        :class:`~bilm_keras.weights.model_detection.SaveDirCheckpoint`, or
        for Paddle's a :class:`~bilm_keras.weights.paddle_checkpoint.
        PaddleCheckpoint`. Both have ``path``.

    Raises:
        CheckpointFileError, CheckpointError: a checkpoint that cannot be
            read or does not fit the options.
        OptionsError: a vocabulary of another size.
    """
    return run_reader(as_detected(save_dir, checkpoint=checkpoint)
                      ).language_model(vocab_file)


def run_reader(model: DetectedModel):
    """The reader of a trained run's family: ``language_model(vocab_file)``
    and ``dump(outfile)``.

    Raises:
        ModelDetectionError: a model that is no trained run (a converted
            model's folder, a TF1 Hub module).
    """
    if model.is_paddle:
        return _PaddleRun(model)
    if model.family == TF1_CHECKPOINT:
        return _BilmTFRun(model)
    if model.family == OUR_RUN:
        return _OurRun(model)
    raise ModelDetectionError(
        f"{model.given}: expected a training run (ours, bilm-tf's or a "
        f"Paddle checkpoint), found a {model.family} model")


@dataclasses.dataclass(frozen=True)
class _Run:
    model: DetectedModel

    @property
    def save_dir(self) -> str:
        return self.model.model_dir

    @property
    def found(self):
        """The checkpoint detection chose, its passed-over newer ones said
        in one line."""
        found = self.model.run_checkpoint
        note = found.fallback_note()
        if note is not None:
            logger.warning(note)
        return found


class _OurRun(_Run):
    def language_model(self, vocab_file=None) -> tuple:
        found = self.found
        options, lm, vocab = load_trained_model(
            self.save_dir, vocab_file=vocab_file, path=found.path)
        return options, lm, vocab, found

    def dump(self, outfile: str) -> tuple:
        found = self.model.run_checkpoint
        found.require_latest(self.save_dir)
        options, lm, _ = load_trained_model(self.save_dir, path=found.path)
        os.makedirs(os.path.dirname(os.path.abspath(outfile)),
                    exist_ok=True)
        save_bilm_tf_hdf5(lm.backbone, outfile)
        return options, found.path


class _BilmTFRun(_Run):
    def language_model(self, vocab_file=None) -> tuple:
        found = self.found
        options_file = os.path.join(self.save_dir, OPTIONS_FILE)
        options = BiLMOptions.from_json(options_file)
        vocab = None
        if vocab_file is not None:  # before the model: a wrong file fails
            vocab = load_vocab(vocab_file, options)
            check_vocab_fits(options, vocab, vocab_file, options_file)
        _, lm, _ = load_bilm_tf_language_model(self.save_dir, found,
                                               options=options)
        return options, lm, vocab, found

    def dump(self, outfile: str) -> tuple:
        found = self.model.run_checkpoint
        found.require_latest(self.save_dir)
        written = dump_bilm_tf_checkpoint(self.save_dir, found, outfile)
        return written["options"], found.path


class _PaddleRun(_Run):
    def language_model(self, vocab_file=None) -> tuple:
        return load_paddle_language_model(self.model.checkpoint,
                                          vocab_file=vocab_file)

    def dump(self, outfile: str) -> tuple:
        return dump_paddle_checkpoint(self.model.checkpoint, outfile)
