"""``tf.function`` without AutoGraph: how bilm_keras traces its graphs.

AutoGraph rewrites a traced function, and every function it calls, so that
a Python ``if``/``while``/``for`` over a tensor becomes ``tf.cond`` /
``tf.while_loop``. bilm_keras writes its loops as ``tf.while_loop``. It
branches only on Python values, settings and shapes known while tracing.
So there is nothing to convert. Yet converting was most of a first call's
tracing, as ``bench/first_call.py`` measures (figures in
``bench/RESULTS.md``). With AutoGraph off, a Python ``if`` on a tensor
fails while tracing instead of being converted unseen. The error reads
"using a ``tf.Tensor`` as a Python ``bool`` is not allowed".
"""

from typing import Callable, Optional

import tensorflow as tf


def graph_function(func: Optional[Callable] = None, **kwargs):
    """``tf.function(func, autograph=False, **kwargs)``.

    Used as ``tf.function`` is: ``graph_function(f, input_signature=...)``,
    or as a decorator with or without arguments (``@graph_function``,
    ``@graph_function(reduce_retracing=True)``).

    Args:
        func: the Python function to trace, or None for a decorator.
        **kwargs: ``tf.function``'s other arguments (``input_signature``,
            ``jit_compile``, ``reduce_retracing``).
    """
    return tf.function(func, autograph=False, **kwargs)
