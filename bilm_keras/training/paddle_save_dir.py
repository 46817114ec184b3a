"""A Paddle ELMo checkpoint wherever a ``--save_dir`` or
``--init_checkpoint`` is taken.

That is a Fluid persistables directory, the baike model, or a PaddleNLP
``.pdparams``. It may also be a PaddleNLP run's save_dir, or the
``--init_from_ckpt`` prefix PaddleNLP's scripts take.

:func:`locate_paddle_checkpoint` tells one from a save_dir of ours or
bilm-tf's by file names, see
:mod:`~bilm_keras.training.checkpoint_family`.
:func:`load_paddle_language_model` builds our
:class:`~bilm_keras.models.language_model.LanguageModel` from its
options. It fills it, Paddle's softmax included, with
:mod:`bilm_keras.weights.paddle_checkpoint`. The vocabulary comes in our
form, PaddleNLP's specials before its words, by ``read_paddlenlp``.
"""

from __future__ import annotations

import os
import tempfile
from typing import Optional

from bilm_keras.training import checkpoint_family
from bilm_keras.training.checkpoint_family import FoundCheckpoint


def locate_paddle_checkpoint(
        path: str | os.PathLike, *,
        detected: Optional[FoundCheckpoint] = None) -> str | None:
    """The Paddle checkpoint ``path`` names (a ``.pdparams`` file or a
    persistables directory), else None (a save_dir of ours or bilm-tf's,
    or nothing). Reads names only
    (:func:`~bilm_keras.training.checkpoint_family.detect_checkpoint`).

    Args:
        detected: FoundCheckpoint or None. What ``detect_checkpoint``
            found at ``path``, when the caller asked already. None asks
            here.

    Raises:
        PaddleFormatError: a directory of ``.pdparams`` none of which is
            ``final`` or a step number, and more than one.
    """
    found = (checkpoint_family.detect_checkpoint(path) if detected is None
             else detected)
    if found is None or not found.family.paddle:
        return None
    return found.path


def load_paddle_language_model(path: str, *, vocab_file=None,
                               training: bool = False) -> tuple:
    """A Paddle checkpoint as our :class:`LanguageModel`, softmax included.

    Args:
        path: what :func:`locate_paddle_checkpoint` returned.
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
    from bilm_keras.training.inputs import load_vocab
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


def dump_paddle_checkpoint(path: str, outfile: str) -> dict:
    """``dump-weights`` of a Paddle checkpoint: its ``lm_weights.hdf5``
    (atomically) and ``options.json`` beside it, as ``convert-paddle``
    writes them.

    Returns:
        dict: ``weight_file``, ``options_file`` and ``checkpoint`` (the
        path read).
    """
    from bilm_keras._utils.atomic_files import atomic_hdf5
    from bilm_keras.options import BiLMOptions
    from bilm_keras.training.options_file import write_options
    from bilm_keras.weights.paddle_conversion import read_paddle

    model = read_paddle(path)  # checked whole before anything is written
    options = BiLMOptions.from_dict(model.options, source=model.source)
    out_dir = os.path.dirname(os.path.abspath(outfile))
    os.makedirs(out_dir, exist_ok=True)
    with atomic_hdf5(outfile) as fout:
        for name, value in model.lm_weights.items():
            fout.create_dataset(name, data=value)
    options_file = os.path.join(out_dir, "options.json")
    write_options(options, options_file)
    return dict(weight_file=outfile, options_file=options_file,
                checkpoint=path)

