"""bilm-tf's ``run_test.py`` perplexity: states carried through the heldout.

bilm-tf's ``test()`` runs its model with ``unroll_steps = 1`` over the
stream of :mod:`bilm_keras.data.bilm_tf_heldout`. It feeds each batch's
final LSTM states in as the next batch's initial states. So every row
reads its sentences one after another from the states the previous ones
left. Each batch's loss is the mean over its rows of the full-softmax
loss, the two directions averaged. The figure is ``exp`` of the mean batch
loss. It is the perplexity the ELMo paper and bilm-tf's users quote.

Here the same stream runs through a :class:`LanguageModel`, the states
stepped by this module. Batch ``t + 1``'s row ``i`` continues batch
``t``'s row ``i``. So :data:`BATCHES_PER_CALL` consecutive unroll-1
batches are one `(batch, BATCHES_PER_CALL)` window: the same LSTM steps,
in one call. Every batch is full, as bilm-tf dropped the last incomplete
one. So the mean of the batch losses is the mean token loss of each
direction, averaged::

    perplexity = exp(mean over batches of (loss_fwd + loss_bwd) / 2)
               = exp((sum_fwd + sum_bwd) / (2 * n_batches * batch_size))

Our default ``test`` (:mod:`bilm_keras.training.evaluation`) instead
scores every heldout token once. The two figures differ.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import os
from typing import Dict, Iterable, Optional

import numpy as np
import tensorflow as tf

from bilm_keras._utils.graph_function import graph_function
from bilm_keras.data.bilm_tf_heldout import (
    bilm_tf_shard_order,
    iter_bilm_tf_heldout_batches,
)
from bilm_keras.save_dirs.save_dir_models import load_save_dir_model

logger = logging.getLogger(__name__)

#: consecutive unroll-1 batches run as one window, in one call
BATCHES_PER_CALL = 20


@dataclasses.dataclass(frozen=True)
class StatefulPerplexity:
    """bilm-tf's ``test()`` figure and its parts.

    Attributes:
        perplexity: ``exp`` of the mean batch loss, the directions
            averaged: the number bilm-tf's ``run_test.py`` printed.
        direction_perplexities: ``{direction: exp(its mean token loss)}``.
        n_batches: full batches scored (the incomplete last one dropped).
        batch_size: rows per batch.
    """

    perplexity: float
    direction_perplexities: Dict[str, float]
    n_batches: int
    batch_size: int

    @property
    def n_tokens(self) -> int:
        """Targets scored per direction."""
        return self.n_batches * self.batch_size


def _any_length(window: Dict[str, np.ndarray]) -> Dict[str, tf.TensorSpec]:
    """The specs of ``window``'s `(batch, steps[, chars])` arrays with any
    number of steps."""
    return {k: tf.TensorSpec((v.shape[0], None, *v.shape[2:]), v.dtype)
            for k, v in window.items()}


def stateful_perplexity(
    lm,
    batches: Iterable[Dict[str, np.ndarray]],
    *,
    batch_size: int,
    log_every: int = 0,
) -> StatefulPerplexity:
    """bilm-tf's ``test()`` computation over ``batches``.

    Args:
        lm: a :class:`~bilm_keras.models.language_model.LanguageModel`
            with its softmax.
        batches: `(batch_size, 1)` batches in bilm-tf's stream order
            (:func:`~bilm_keras.data.bilm_tf_heldout.iter_bilm_tf_heldout_batches`),
            without ``sentence_start`` (states are carried throughout).
        batch_size: their rows.
        log_every: print the running perplexity every this many batches
            (0: never).

    Raises:
        ValueError: no batch (the data does not fill one).
    """

    @graph_function
    def run_window(window, states):
        out = lm(window, initial_states=states, training=False)
        return out["loss_sum"], out["final_states"]

    directions = list(lm.directions)
    states = lm.zero_states(batch_size)
    loss_sum = {d: 0.0 for d in directions}
    n_batches = 0
    iterator = iter(batches)
    while True:
        group = list(itertools.islice(iterator, BATCHES_PER_CALL))
        if not group:
            break
        # row i of batch t + 1 continues row i of batch t: one window
        window = {k: np.concatenate([b[k] for b in group], axis=1)
                  for k in group[0]}  # (B, len(group)[, C])
        if n_batches == 0:  # one trace, the shorter last window's too
            run_window.get_concrete_function(_any_length(window), states)
        sums, states = run_window(window, states)
        for d in directions:
            loss_sum[d] += float(sums[d])
        before, n_batches = n_batches, n_batches + len(group)
        if log_every and n_batches // log_every > before // log_every:
            running = np.mean(list(loss_sum.values())) / (
                n_batches * batch_size)
            logger.info(f"batch {n_batches}  running perplexity "
                        f"{math.exp(running):.3f}")
    if n_batches == 0:
        raise ValueError(
            f"no complete batch of {batch_size} rows: bilm-tf's evaluation "
            "drops the last incomplete batch, and the heldout data does not "
            "fill one (use a smaller batch_size)")
    n_tokens = n_batches * batch_size
    mean_loss = {d: loss_sum[d] / n_tokens for d in directions}
    return StatefulPerplexity(
        perplexity=math.exp(float(np.mean(list(mean_loss.values())))),
        direction_perplexities={d: math.exp(v) for d, v in mean_loss.items()},
        n_batches=n_batches,
        batch_size=batch_size,
    )


def evaluate_stateful(
    *,
    save_dir: str | os.PathLike,
    vocab_file: str | os.PathLike,
    test_prefix: str,
    batch_size: int = 256,
    log_every: int = 0,
    checkpoint: Optional[str] = None,
) -> StatefulPerplexity:
    """bilm-tf's ``run_test.py`` on a save_dir, bilm-tf's or ours.

    Args:
        save_dir: a save_dir that bilm-tf's ``train()`` or our training
            wrote, told apart by the checkpoint's variable names.
        vocab_file: the model's vocabulary. Its size must be the options'
            ``n_tokens_vocab``.
        test_prefix: glob of heldout files.
        batch_size: rows per batch, ``run_test.py``'s default 256.
        log_every: as in :func:`stateful_perplexity`.
        checkpoint: the checkpoint to read (``model-200``). The default is
            the newest that reads whole
            (:func:`~bilm_keras.save_dirs.save_dir_models.choose_checkpoint`).

    Raises:
        CheckpointFileError, CheckpointError: a save_dir that cannot be
            read.
        OptionsError: a vocabulary of another size.
        CorpusError: no heldout file.
        ValueError: no complete batch.
    """
    save_dir = os.fspath(save_dir)
    bilm_tf_shard_order(test_prefix)  # a missing file before the model
    options, lm, vocab, _ = load_save_dir_model(
        save_dir, vocab_file=vocab_file, checkpoint=checkpoint)
    return stateful_heldout_perplexity(lm, vocab, test_prefix,
                                       batch_size=batch_size,
                                       bidirectional=options.bidirectional,
                                       log_every=log_every)


def stateful_heldout_perplexity(lm, vocab, test_prefix: str, *,
                                batch_size: int, bidirectional: bool,
                                log_every: int = 0) -> StatefulPerplexity:
    """:func:`stateful_perplexity` over bilm-tf's heldout stream of
    ``test_prefix``.

    Raises:
        ValueError: the heldout data does not fill one batch (named).
    """
    batches = iter_bilm_tf_heldout_batches(
        test_prefix, vocab, batch_size, bidirectional=bidirectional)
    try:
        return stateful_perplexity(lm, batches, batch_size=batch_size,
                                   log_every=log_every)
    except ValueError as e:
        raise ValueError(f"{test_prefix}: {e}") from None
