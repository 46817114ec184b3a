"""TensorFlow's two CPU thread pools for a training run.

On the CPU most of a training step is two sequential chains of small
ops side by side. The LSTM layers run as a pipeline over chunks of the
window, layer ``l + 1``'s chunk ``k`` beside layer ``l``'s chunk ``k + 1``,
see :mod:`bilm_keras.layers.training_recurrence`. TensorFlow's default
gives every op as many threads as there are cores, the intra-op pool. It
runs as many ops at a time, the inter-op pool. So the two chains' ops
split each other's cores and wait for each other's threads. Half the
cores per op and two ops at a time lets each chain keep its own:

=============================  ======================================
machine                        ``(intra_op, inter_op)``
=============================  ======================================
no GPU visible, ``n`` cores    ``(max(1, n // 2), 2)``: the automatic
                               setting
a GPU visible                  TensorFlow's own default
``TF_NUM_INTRAOP_THREADS`` or  TensorFlow's reading of them
``TF_NUM_INTEROP_THREADS`` set
=============================  ======================================

On 2 cores ``(1, 2)`` trains the mid-size model 1.17x faster than
TensorFlow's ``(2, 2)``, see ``bench/RESULTS.md``, 2026-11-24. bilm-tf's
own ``train()`` gains 1.2x from the same setting. Larger machines were
not measured, so pass explicit counts there and compare.

The pools can be sized only before TensorFlow runs its first op. A
process that has already run one keeps its pools, see
:func:`configure_training_threads`.
"""

from __future__ import annotations

import logging
import os
from typing import Optional

from bilm_keras._utils.settings import check_int

logger = logging.getLogger(__name__)

#: the environment variables TensorFlow reads for the two pools' sizes
THREAD_VARIABLES = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


def cpu_training_threads(n_cores: int) -> tuple[int, int]:
    """``(intra_op, inter_op)`` for training on ``n_cores`` CPU cores and
    no GPU: half the cores per op, two ops (the pipeline's two chains) at
    a time."""
    return max(1, n_cores // 2), 2


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def configure_training_threads(
    intra_op: Optional[int] = None, inter_op: Optional[int] = None
) -> Optional[tuple[int, int]]:
    """Sizes TensorFlow's CPU thread pools for training.

    Args:
        intra_op: threads per op. 0 means TensorFlow's default, None the
            automatic setting of the module docstring.
        inter_op: ops at a time, with the same conventions.

    Returns:
        ``(intra_op, inter_op)`` as set, 0 where TensorFlow's default is
        kept. None when nothing was set: the automatic setting on a
        machine with a GPU, with one of :data:`THREAD_VARIABLES` set, or
        in a process where TensorFlow has already run an op.

    Raises:
        ValueError: a count that is not an integer >= 0.
        RuntimeError: explicit counts asked for in a process where
            TensorFlow has already run an op and its pools differ.
    """
    check_int("intra_op_threads", intra_op, 0, optional=True)
    check_int("inter_op_threads", inter_op, 0, optional=True)
    import tensorflow as tf

    threading = tf.config.threading
    explicit = intra_op is not None or inter_op is not None
    if not explicit and (any(os.environ.get(v) for v in THREAD_VARIABLES)
                         or tf.config.list_physical_devices("GPU")):
        return None
    auto_intra, auto_inter = cpu_training_threads(available_cores())
    intra_op = auto_intra if intra_op is None else intra_op
    inter_op = auto_inter if inter_op is None else inter_op
    current = (threading.get_intra_op_parallelism_threads(),
               threading.get_inter_op_parallelism_threads())
    if current == (intra_op, inter_op):
        return intra_op, inter_op
    try:
        threading.set_intra_op_parallelism_threads(intra_op)
        threading.set_inter_op_parallelism_threads(inter_op)
    except RuntimeError:
        if explicit:
            raise RuntimeError(
                f"intra_op_threads={intra_op}, inter_op_threads={inter_op}: "
                f"TensorFlow has already run in this process with "
                f"{current}; its thread pools can be sized only before its "
                "first op (call train() first, or use a fresh process)"
            ) from None
        logger.debug("TensorFlow already running; its thread pools %s stay",
                    current)
        return None
    return intra_op, inter_op
