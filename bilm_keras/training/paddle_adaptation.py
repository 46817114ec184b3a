"""``train --init_checkpoint`` from a Paddle checkpoint (a Fluid
persistables directory, a PaddleNLP ``.pdparams``): a new run that starts
from Paddle's LM, Paddle's softmax rows and, where the checkpoint holds
them, Paddle's Adagrad accumulators.

The checkpoint is read once (:func:`read_init_checkpoint`, a
:class:`~bilm_keras.weights.paddle_model.PaddleModel` already in
bilm-tf's layout), then:

* :func:`load_paddle_backbone`: every LM weight, each shape checked against
  the run's options before anything is assigned;
* :func:`keep_paddle_softmax`: the softmax rows of the words the run's
  vocabulary shares with the checkpoint's (its own vocabulary, else
  ``--init_vocab_file``); the rest keep the new rows the run drew;
* :func:`set_paddle_accumulators`: Adagrad's accumulators of the LM, and
  of the kept softmax rows (a new row, and a padding row the tables add,
  start at bilm-tf's initial value), so that the first steps take
  Paddle's step sizes, not a fresh optimizer's.

Paddle keeps no step counter: the run starts at step 0.
"""

from __future__ import annotations

import logging
import os
import tempfile

import numpy as np

from bilm_keras.data.vocabulary import Vocabulary, VocabularyError
from bilm_keras.training.adaptation import keep_softmax_rows, shared_words
from bilm_keras.training.run_checkpoint import SOFTMAX_B_KEY, SOFTMAX_W_KEY
from bilm_keras.weights.bilm_tf_hdf5 import hdf5_shape, weight_table
from bilm_keras.weights.bilm_tf_names import INITIAL_ACCUMULATOR
from bilm_keras.weights.paddle_model import PaddleFormatError, PaddleModel

logger = logging.getLogger(__name__)


def read_init_checkpoint(path: str, init_vocab_file=None) -> PaddleModel:
    """The checkpoint as a :class:`PaddleModel`, with its vocabulary
    (``init_vocab_file`` as Paddle read it: PaddleNLP's words-only file,
    the baike model's ``vocabulary_min5k.txt``; default: the one it
    carries, if any), checked against its softmax."""
    from bilm_keras.weights.paddle_conversion import read_paddle

    return read_paddle(path, init_vocab_file)


def load_paddle_backbone(model: PaddleModel, backbone) -> None:
    """Fills a built ``backbone`` with ``model``'s LM weights.

    Raises:
        PaddleFormatError: a dataset the options' model needs is missing or
            of another shape (named with the checkpoint and both shapes);
            nothing is assigned then.
    """
    rows = weight_table(backbone)
    for row in rows:  # every shape first
        value = model.lm_weights.get(row.hdf5_path)
        want = hdf5_shape(row)
        found = None if value is None else tuple(value.shape)
        if found != want:
            raise PaddleFormatError(
                f"{model.source}: {row.hdf5_path}: the options (--options) "
                f"give shape {want}, found "
                f"{'none' if found is None else found}")
    for row in rows:
        row.variable.assign(row.to_keras(
            np.asarray(model.lm_weights[row.hdf5_path], np.float32)))


def keep_paddle_softmax(lm, model: PaddleModel, *, vocab: Vocabulary,
                        vocab_file: str, init_vocab_file=None) -> tuple:
    """Keeps the softmax rows of the words ``vocab`` shares with the
    checkpoint's vocabulary (``model.vocab``: :func:`read_init_checkpoint`
    read it; else, for a word-input model, the run's own, whose words its
    table's rows are). ``init_vocab_file``: the checkpoint's vocabulary
    file instead, as Paddle read it (PaddleNLP's holds only words: its
    four specials come first). Logs what it kept.

    Returns:
        ``(new_rows, old_rows)`` int64 arrays (empty: none kept).

    Raises:
        VocabularyError: the checkpoint's vocabulary does not fit its
            softmax, or a word-input model's vocabulary is not the
            checkpoint's (its table's rows are words).
    """
    old_words = model.vocab
    if init_vocab_file is not None and model.system == "paddlenlp":
        # PaddleNLP's file holds only words: its four specials first
        from bilm_keras.weights.paddlenlp_elmo import read_paddlenlp_vocab

        old_words = read_paddlenlp_vocab(
            init_vocab_file, model.softmax_bias.shape[0], model.source)
    elif init_vocab_file is not None:
        old = Vocabulary(os.fspath(init_vocab_file))
        old_words = [old.id_to_word(i) for i in range(old.size)]
    empty = np.zeros(0, np.int64)
    n_rows = model.softmax_bias.shape[0]
    if (old_words is None and not lm.backbone.use_character_inputs
            and vocab.size == n_rows):
        # a word-input model's table rows are the run's words (the
        # options' n_tokens_vocab checked them): its softmax's rows too
        old_words = [vocab.id_to_word(i) for i in range(vocab.size)]
    if old_words is None:
        logger.info(f"softmax: new, for the {vocab.size} words of {vocab_file} "
              f"({model.source} carries no vocabulary: give it as "
              "--init_vocab_file to keep the rows of the words both have)")
        return empty, empty
    if len(old_words) != n_rows:
        raise VocabularyError(
            f"{model.source}: its vocabulary has {len(old_words)} words, "
            f"but the softmax of {model.source} has {n_rows} rows: not the "
            "vocabulary it was trained with")
    # our Vocabulary reads files: the checkpoint's words, written once
    with tempfile.TemporaryDirectory(prefix="bilm_paddle_vocab.") as tmp:
        lines = os.path.join(tmp, "vocab.txt")
        with open(lines, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(word + "\n" for word in old_words)
        old_vocab = Vocabulary(lines)
    new_rows, old_rows = shared_words(old_vocab, vocab)
    same = (len(old_words) == vocab.size and len(new_rows) == vocab.size
            and np.array_equal(new_rows, old_rows))
    if not lm.backbone.use_character_inputs and not same:
        raise VocabularyError(
            f"{vocab_file}: a word-input model keeps its vocabulary (its "
            f"table's rows are words): expected the words of "
            f"{model.source}'s vocabulary in its order")
    keep_softmax_rows(lm, model.softmax_weight, model.softmax_bias,
                      new_rows, old_rows)
    logger.info(f"softmax: {len(new_rows)} of the {vocab.size} words of "
          f"{vocab_file} keep their rows from {model.source}"
          + (" (the same vocabulary)" if same else ""))
    return new_rows, old_rows


def set_paddle_accumulators(lm, optimizer, model: PaddleModel,
                            new_rows: np.ndarray,
                            old_rows: np.ndarray) -> bool:
    """Adagrad's accumulators from the checkpoint: the LM's, and the kept
    softmax rows'; every other row at bilm-tf's initial value. Returns
    False (nothing set) where the checkpoint holds none."""
    acc = model.accumulators
    if not acc:
        logger.info(f"Adagrad: new accumulators ({model.source} holds none)")
        return False
    for row in weight_table(lm.backbone):
        value = np.array(row.to_keras(np.asarray(acc[row.hdf5_path],
                                                 np.float32)), np.float32)
        value[: row.keras_row_offset or 0] = INITIAL_ACCUMULATOR
        optimizer.set_accumulator(row.variable, value)
    softmax = lm.softmax
    parts = [(softmax.b, SOFTMAX_B_KEY)]
    if not softmax.share_weights:
        parts.append((softmax.W, SOFTMAX_W_KEY))
    for variable, key in parts:
        value = np.full(tuple(variable.shape), INITIAL_ACCUMULATOR,
                        np.float32)
        value[new_rows] = np.asarray(acc[key], np.float32)[old_rows]
        optimizer.set_accumulator(variable, value)
    logger.info(f"Adagrad: accumulators from {model.source} (the LM's and "
          f"{len(new_rows)} softmax rows)")
    return True
