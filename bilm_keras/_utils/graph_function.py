"""``tf.function`` without AutoGraph: how bilm_keras traces its graphs.

AutoGraph rewrites a traced function, and every function it calls, so that
a Python ``if``/``while``/``for`` over a tensor becomes ``tf.cond`` /
``tf.while_loop``. bilm_keras writes its loops as ``tf.while_loop`` and
branches only on Python values (settings, shapes known while tracing), so
there is nothing to convert; yet converting was most of a first call's
tracing (``bench/first_call.py``; the figures in ``bench/RESULTS.md``).
Off, a Python ``if`` on a tensor fails while tracing ("using a
``tf.Tensor`` as a Python ``bool`` is not allowed") instead of being
converted unseen.
"""

from typing import Callable, Optional

import tensorflow as tf


def graph_function(func: Optional[Callable] = None, **kwargs):
    """``tf.function(func, autograph=False, **kwargs)``.

    Used as ``tf.function`` is: ``graph_function(f, input_signature=...)``,
    or as a decorator with or without arguments (``@graph_function``,
    ``@graph_function(reduce_retracing=True)``).

    Args:
        func: the Python function to trace; None for a decorator.
        **kwargs: ``tf.function``'s other arguments (``input_signature``,
            ``jit_compile``, ``reduce_retracing``).
    """
    return tf.function(func, autograph=False, **kwargs)
