"""Domain adaptation: continue training a published biLM on new text.

A bilm-tf or AllenNLP ``lm_weights.hdf5`` holds the token embedder and
both LSTM stacks but no softmax, since bilm-tf's ``dump_weights`` leaves
it out. :func:`~bilm_keras.training.train` with ``init_weights``
continues training one on domain text in three steps.

1. The :class:`LanguageModel` the options describe is built, its backbone
   with placeholder zeros. :func:`load_bilm_tf_hdf5` fills every backbone
   variable from the file. It is ``strict``: every dataset of the file
   must have a variable too. The one weight table of
   :mod:`bilm_keras.weights.bilm_tf_hdf5` handles the layout: the padding
   row of ``char_embed``, the conv kernels, and ``n_characters`` 261 or
   262. The Keras table always has the padding row.
2. The softmax is new, for the vocabulary of ``--vocab_file``. ``W`` is
   drawn from bilm-tf's initialiser, normal(0, 1 / sqrt(projection_dim)),
   a block of rows at a time by :func:`draw_softmax_weights`. The bias is
   the log of each class's smoothed frequency as a target in the training
   text, from :func:`target_log_frequencies`. ``softmax_bias="zeros"``
   gives bilm-tf's zeros instead. A softmax whose bias is the unigram
   log-probability starts as the unigram model of the domain instead of a
   uniform guess over the vocabulary. So its first gradients into the
   LSTMs are not those of a random classifier.
3. For the first ``freeze_lm_steps`` steps only the softmax trains, see
   :func:`softmax_variables`. The LSTMs and the char-CNN get no update,
   and their Adagrad accumulators stay at their initial value. Then
   everything trains. bilm-tf's advice for fine-tuning was to keep the
   vocabulary and re-learn the softmax. The warm-up does that before the
   pretrained LSTMs see any gradient.

The warm-up's end is a global step kept in the checkpoints by
:class:`~bilm_keras.training.lm_warmup.LMWarmup`. So a restart during
the warm-up finishes it and one after it trains everything.

A training checkpoint holds the softmax too, trained for the vocabulary
it was trained with. ``init_checkpoint`` names one: bilm-tf's save_dir,
e.g. the published ``model.ckpt-935588``. A save_dir holds no
vocabulary, so the user names it with ``init_vocab_file``.
:func:`init_softmax_from_checkpoint` keeps the checkpoint's softmax rows,
``W`` and ``b``, of every word ``vocab_file`` shares with it. That is all
of them for the same vocabulary. The other words get new rows as above.

Without ``init_vocab_file`` the softmax is new, as with
``init_weights``. Two vocabularies of one size are not the same
vocabulary, and a softmax kept for the wrong words would predict the
wrong words. The backbone does not depend on the vocabulary, since a
char-CNN reads characters. A token-input model's embedding table does,
and keeps its vocabulary, as with ``init_weights``.
"""

from __future__ import annotations

import logging
import os
from typing import Optional

import h5py
import keras
import numpy as np
import tensorflow as tf

from bilm_keras.data.unigram import target_counts
from bilm_keras.data.vocabulary import UNK_TOKEN, Vocabulary, VocabularyError
from bilm_keras.models.language_model import LanguageModel
from bilm_keras.save_dirs.bilm_tf_run import read_bilm_tf_softmax
from bilm_keras.training.training_run import SOFTMAX_BIASES
from bilm_keras.weights.bilm_tf_hdf5 import WeightFileError, load_bilm_tf_hdf5

logger = logging.getLogger(__name__)


def check_weight_file(weight_file) -> str:
    """``weight_file`` as a path. Fails early, before any corpus pass,
    when it does not exist."""
    path = os.fspath(weight_file)
    if not os.path.isfile(path):
        raise WeightFileError(f"{path}: weight file not found "
                              "(--init_weights)")
    return path


def target_log_frequencies(token_counts, n_sentences: int,
                           vocab: Vocabulary, *,
                           bidirectional: bool = True) -> np.ndarray:
    """Log of each softmax class's frequency as a target in a corpus.

    The targets are what the loss sees, see :func:`~bilm_keras.data.
    unigram.target_counts`. They are every token, OOV ones as ``<UNK>``,
    and ``</S>``, the forward LM's last target. A bidirectional model adds
    ``<S>``, the backward LM's, as both directions share the one softmax.
    Add-one smoothing gives classes the corpus never shows a finite bias.

    Args:
        token_counts, n_sentences: of the corpus, from
            :func:`~bilm_keras.data.corpus.count_corpus`.

    Returns:
        `(vocab.size,)` float32 ``log((count + 1) / (total + vocab.size))``.
    """
    counts = target_counts(token_counts, n_sentences, vocab,
                           bidirectional=bidirectional) + 1.0
    return np.log(counts / counts.sum()).astype(np.float32)


def init_softmax(lm: LanguageModel, bias: str = "unigram", *,
                 token_counts=None, n_sentences: Optional[int] = None,
                 vocab: Optional[Vocabulary] = None) -> None:
    """Sets the new softmax's bias (``W`` keeps its initialiser).

    Args:
        bias: ``"unigram"`` (log target frequencies of the training corpus
            whose ``token_counts`` and ``n_sentences`` are given, see
            :func:`target_log_frequencies`) or ``"zeros"`` (bilm-tf).
    """
    if bias not in SOFTMAX_BIASES:
        raise ValueError(f"softmax_bias: expected one of {SOFTMAX_BIASES}, "
                         f"found {bias!r}")
    if bias == "zeros":
        lm.softmax.b.assign(tf.zeros_like(lm.softmax.b))
        return
    lm.softmax.b.assign(target_log_frequencies(
        token_counts, n_sentences, vocab,
        bidirectional=lm.backbone.bidirectional))


def load_pretrained_lm(lm: LanguageModel, weight_file) -> None:
    """Fills every variable of ``lm``'s backbone from bilm-tf HDF5.

    Every dataset of the file must have a variable and every variable a
    dataset of its shape. Otherwise :class:`WeightFileError` names the
    file, the dataset and both shapes, and nothing is assigned.
    """
    path = check_weight_file(weight_file)
    if not lm.backbone.use_character_inputs:
        # a token model's embedding table is its vocabulary: a token model
        # adapts with the vocabulary it was trained with
        with h5py.File(path, "r") as fin:
            table = fin.get("embedding")
            if (isinstance(table, h5py.Dataset) and table.ndim == 2
                    and table.shape[0] != lm.n_tokens_vocab):
                raise WeightFileError(
                    f"{path}: dataset 'embedding' has {table.shape[0]} rows "
                    f"(its vocabulary), the --vocab_file "
                    f"{lm.n_tokens_vocab}; a "
                    "token-input model keeps its vocabulary"
                )
    load_bilm_tf_hdf5(lm.backbone, path, strict=True)


#: rows of the softmax drawn at once (bounds the temporary: the published
#: vocabulary's ``W`` is 1.6 GB)
DRAW_BLOCK_BYTES = 8 << 20


def draw_softmax_weights(lm: LanguageModel) -> None:
    """Draws the softmax's ``W`` from its initialiser, normal(0,
    ``weight_stddev``), into a model built with placeholders. It draws a
    block of rows at a time, and does nothing when ``W`` is the shared
    token table. Keras' global seed, ``keras.utils.set_random_seed``,
    seeds it."""
    softmax = lm.softmax
    if softmax.share_weights:
        return
    seed = keras.random.SeedGenerator()
    n_tokens_vocab, dim = softmax.W.shape

    def draw(rows):
        return keras.random.normal((rows, dim), stddev=softmax.weight_stddev,
                                   seed=seed)

    step = max(1, DRAW_BLOCK_BYTES // (4 * dim))
    if n_tokens_vocab <= step or tf.distribute.has_strategy():
        softmax.W.assign(draw(n_tokens_vocab))
        return
    target = softmax.W.value  # the tf.Variable: sliced assignment
    for start in range(0, n_tokens_vocab, step):
        stop = min(start + step, n_tokens_vocab)
        target[start:stop].assign(draw(stop - start))
    # as the HDF5 loader: a sliced assignment leaves the variable copying
    # itself on every read; nothing else holds it
    tf.raw_ops.DisableCopyOnRead(resource=target.handle)


def shared_words(old_vocab: Vocabulary, vocab: Vocabulary) -> tuple:
    """``(rows of vocab, rows of old_vocab)``, int64 `(n,)` each: the
    words both vocabularies have (``<S>``, ``</S>`` and ``<UNK>``
    included), in ``vocab``'s order."""
    new_rows, old_rows = [], []
    for i in range(vocab.size):
        word = vocab.id_to_word(i)
        j = old_vocab.word_to_id(word)  # <UNK>'s id when it has none
        if j >= 0 and (j != old_vocab.unk or word == UNK_TOKEN):
            new_rows.append(i)
            old_rows.append(j)
    return (np.asarray(new_rows, np.int64), np.asarray(old_rows, np.int64))


def keep_softmax_rows(lm: LanguageModel, W: Optional[np.ndarray],
                      b: np.ndarray, new_rows: np.ndarray,
                      old_rows: np.ndarray) -> None:
    """Sets the softmax rows ``new_rows`` of ``lm`` to rows ``old_rows``
    of another softmax's ``W`` `(V_old, P)` and ``b`` `(V_old,)` (``W``
    None: it is the token table, loaded with the backbone)."""
    softmax = lm.softmax
    whole = (len(new_rows) == b.shape[0] == softmax.b.shape[0]
             and np.array_equal(new_rows, old_rows))
    if W is not None and not softmax.share_weights:
        if whole:  # the same vocabulary: no (V, P) copy of the table
            softmax.W.assign(W)
        else:
            values = softmax.W.numpy()  # (V, P)
            values[new_rows] = W[old_rows]
            softmax.W.assign(values)
    bias = softmax.b.numpy()  # (V,)
    bias[new_rows] = b[old_rows]
    softmax.b.assign(bias)


def init_softmax_from_checkpoint(lm: LanguageModel, found, *,
                                 init_vocab_file, vocab: Vocabulary,
                                 vocab_file) -> int:
    """Keeps the softmax rows of the bilm-tf checkpoint ``found`` for the
    words ``vocab`` shares with the checkpoint's vocabulary.

    ``vocab`` is read from ``vocab_file``, the checkpoint's vocabulary
    from ``init_vocab_file``, and None keeps none. It runs after
    :func:`draw_softmax_weights` and :func:`init_softmax` made the new
    rows. It prints what it kept and returns the number of rows kept.
    ``found`` is a
    :class:`~bilm_keras.weights.model_detection.SaveDirCheckpoint`, as
    detection found it once for the run.

    Raises:
        VocabularyError: ``init_vocab_file`` is not the checkpoint's, as
            its size is not the softmax's. Or, for a token-input model,
            it is not ``vocab_file``'s words in its order.
        CheckpointFileError: the checkpoint holds no softmax.
    """
    if init_vocab_file is None:
        logger.info(f"softmax: new, for the {vocab.size} words of {vocab_file} "
                    "(give the checkpoint's vocabulary as --init_vocab_file to "
                    "keep the rows of the words both have)")
        return 0
    old_vocab = Vocabulary(init_vocab_file)
    path, W, b = read_bilm_tf_softmax(
        found, purpose="--init_vocab_file keeps its rows; without it the "
                       "softmax is new")
    if old_vocab.size != b.shape[0]:
        raise VocabularyError(
            f"{init_vocab_file}: {old_vocab.size} words, but the softmax of "
            f"{path} has {b.shape[0]} rows (lm/softmax/b): not the "
            "vocabulary it was trained with")
    new_rows, old_rows = shared_words(old_vocab, vocab)
    same = (old_vocab.size == vocab.size and len(new_rows) == vocab.size
            and np.array_equal(new_rows, old_rows))
    if not lm.backbone.use_character_inputs and not same:
        raise VocabularyError(
            f"{vocab_file}: a token-input model keeps its vocabulary (its "
            f"embedding rows are words): expected the words of "
            f"{init_vocab_file} in its order")
    keep_softmax_rows(lm, W, b, new_rows, old_rows)
    if same:
        logger.info(f"softmax: kept whole from {path} (the same vocabulary)")
    else:
        logger.info(f"softmax: {len(new_rows)} of the {vocab.size} words of "
                    f"{vocab_file} keep their rows from {path} (the words "
                    f"{init_vocab_file} has too); {vocab.size - len(new_rows)} "
                    "get new rows")
    return len(new_rows)


def softmax_variables(lm: LanguageModel) -> list:
    """The variables the warm-up trains: the softmax's own ``W`` and
    ``b``, or only ``b`` when ``W`` is the shared token table."""
    return list(lm.softmax.trainable_variables)
