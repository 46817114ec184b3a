"""Dropout whose masks can be a function of a seed, the same in every path.

The biLM drops each LSTM layer's input and the top layer's output in
training. Those are bilm-tf's ``DropoutWrapper(input_keep_prob)`` and its
``tf.nn.dropout`` on the LSTM output. The training loop passes one seed a
step. Every mask is then a stateless function of that seed, the direction
and the layer, drawn in the batch-major layout `(batch, time, dim)`. So
the statically unrolled training path, both directions batched, and the
plain per-direction path draw the very same masks. Their losses can then
be compared with dropout on. Without a seed, the masks come from
TensorFlow's stateful generator, as ``tf.nn.dropout``'s do.
"""

import tensorflow as tf

from bilm_keras._utils.backends import backend, on_tensorflow


def fold_seed(seed, *keys):
    """A new `(2,)` stateless seed from ``seed`` and integer ``keys``,
    by ``tf.random.experimental.stateless_fold_in``, one key at a time.
    None stays None."""
    if seed is None:
        return None
    for key in keys:
        seed = tf.random.experimental.stateless_fold_in(seed, key)
    return seed


def dropout(x, rate, seed=None, time_major=False):
    """Inverted dropout of ``x`` at ``rate``.

    Args:
        x: `(batch, time, dim)`, or `(time, batch, dim)` with
            ``time_major``.
        rate: float in [0, 1).
        seed: None for stateful masks, or a `(2,)` int seed. The mask is
            then drawn as a `(batch, time, dim)` function of it, whatever
            the layout of ``x``.
        time_major: layout of ``x``.

    Returns:
        ``x`` with dropped entries zero and the rest scaled by
        ``1 / (1 - rate)``, in the same shape and layout.
    """
    if not rate:
        return x
    if not on_tensorflow():
        raise NotImplementedError(
            f"dropout: the biLM's LSTM input dropout in training runs under "
            f"TensorFlow only, found KERAS_BACKEND={backend()} (train the "
            f"language model under TensorFlow, or use dropout=0.0)")
    if seed is None:
        return tf.nn.dropout(x, rate=rate)
    if time_major:
        x = tf.transpose(x, (1, 0, 2))  # (B, T, D)
    x = tf.nn.experimental.stateless_dropout(x, rate=rate, seed=seed)
    if time_major:
        x = tf.transpose(x, (1, 0, 2))  # (T, B, D)
    return x
