"""Domain adaptation's warm-up: the first steps train only the softmax.

:class:`LMWarmup` keeps its end in the checkpoints.
:mod:`bilm_keras.training.adaptation` has the why."""

from __future__ import annotations

import logging
from typing import Callable

import tensorflow as tf

logger = logging.getLogger(__name__)


class LMWarmup:
    """The global step up to which only the softmax trains.

    Kept in the checkpoints (:class:`~bilm_keras.training.run_checkpoint.
    RunCheckpoint`) so that a restart knows whether the warm-up is over. 0
    (no warm-up) for a run from scratch and for checkpoints written before
    adaptation existed.
    """

    def __init__(self, freeze_lm_steps: int = 0):
        self.until = tf.Variable(freeze_lm_steps, dtype=tf.int64,
                                 trainable=False, name="lm_frozen_until")

    def wrap(self, full_step: Callable, make_warmup_step: Callable, *,
             start_step: int) -> Callable:
        """``full_step``, preceded by a softmax-only step for the global
        steps ``start_step + 1 .. until``.

        The step is counted here, not read from the optimizer, so choosing
        costs no device round trip. ``make_warmup_step()`` is called, and
        traced, only if a warm-up step is left.
        """
        until = int(self.until.numpy())
        if until <= start_step:
            return full_step
        warmup_step = make_warmup_step()
        logger.info(f"steps {start_step + 1}..{until}: only the softmax trains "
                    "(the pretrained LM is frozen)")
        current = start_step

        def train_step(batch, states):
            nonlocal current
            current += 1
            if current == until + 1:
                logger.info("step %d: the whole model trains from now on",
                            current)
            step = warmup_step if current <= until else full_step
            return step(batch, states)

        return train_step
