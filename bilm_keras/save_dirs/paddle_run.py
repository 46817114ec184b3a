"""A Paddle ELMo checkpoint wherever a ``--save_dir`` or
``--init_checkpoint`` is taken.

That is a Fluid persistables directory, the baike model, or a PaddleNLP
``.pdparams``. It may also be a PaddleNLP run's save_dir, or the
``--init_from_ckpt`` prefix PaddleNLP's scripts take.

:func:`~bilm_keras.weights.model_detection.detect_model` tells one from a
save_dir of ours or bilm-tf's by its file names.
:func:`load_paddle_language_model` builds our
:class:`~bilm_keras.models.language_model.LanguageModel` from its
options. It fills it, Paddle's softmax included, with
:mod:`bilm_keras.weights.paddle_checkpoint`. The vocabulary comes in our
form, PaddleNLP's specials before its words, by ``read_paddlenlp``.
"""

from __future__ import annotations

import os
import tempfile


def load_paddle_language_model(path: str, *, vocab_file=None,
                               training: bool = False) -> tuple:
    """A Paddle checkpoint as our :class:`LanguageModel`, softmax included.

    Args:
        path: a Paddle model's checkpoint, as
            :attr:`~bilm_keras.weights.model_detection.DetectedModel.
            checkpoint` names it.
        vocab_file: the model's vocabulary as Paddle read it, checked
            against the softmax. E.g. PaddleNLP's words-only file or the
            baike model's ``vocabulary_min5k.txt``. None takes the one the
            checkpoint carries, if any.
        training: build with the options' dropout.

    Returns:
        ``(options, lm, vocab, checkpoint)``. The options, the model, the
        vocabulary in our form or None, and the
        :class:`~bilm_keras.weights.paddle_checkpoint.PaddleCheckpoint`.
        Its ``path`` is the checkpoint read, and its ``iter_accumulators``
        is Paddle's Adagrad state where the checkpoint has it.

    Raises:
        PaddleFormatError: see ``read_paddle`` and ``read_paddle_checkpoint``.
    """
    from bilm_keras.models.language_model import LanguageModel
    from bilm_keras.options import BiLMOptions
    from bilm_keras.data.vocab_for_options import load_vocab
    from bilm_keras.weights.bilm_tf_checkpoint import (
        assign_bilm_tf_checkpoint,
    )
    from bilm_keras.weights.paddle_checkpoint import read_paddle_checkpoint
    from bilm_keras.weights.paddle_conversion import read_paddle

    model = read_paddle(path, vocab_file)
    options = BiLMOptions.from_dict(model.options, source=model.source)
    lm = LanguageModel.from_options(options, training=training).build_all()
    checkpoint = read_paddle_checkpoint(model, lm.backbone,
                                        softmax=lm.softmax)
    assign_bilm_tf_checkpoint(checkpoint)
    vocab = None
    if model.vocab is not None:
        # our vocabulary classes read files: the lines, written once
        with tempfile.TemporaryDirectory() as tmp:
            lines = os.path.join(tmp, "vocab.txt")
            with open(lines, "w", encoding="utf-8", newline="\n") as f:
                f.writelines(word + "\n" for word in model.vocab)
            vocab = load_vocab(lines, options)
    return options, lm, vocab, checkpoint


def dump_paddle_checkpoint(path: str, outfile: str):
    """``dump-weights`` of a Paddle checkpoint: its ``lm_weights.hdf5``,
    atomically, as ``convert-paddle`` writes it.

    Returns:
        ``(options, path)``: the checkpoint's :class:`BiLMOptions`, for the
        ``options.json`` beside the file, and the path read.
    """
    from bilm_keras._utils.atomic_files import atomic_hdf5
    from bilm_keras.options import BiLMOptions
    from bilm_keras.weights.paddle_conversion import read_paddle

    model = read_paddle(path)  # checked whole before anything is written
    options = BiLMOptions.from_dict(model.options, source=model.source)
    os.makedirs(os.path.dirname(os.path.abspath(outfile)), exist_ok=True)
    with atomic_hdf5(outfile) as fout:
        for name, value in model.lm_weights.items():
            fout.create_dataset(name, data=value)
    return options, path
