"""The SavedModel's warning for a token far longer than a word, in the
graph (:mod:`bilm_keras.data.long_tokens` has the limit and the words).

The ``default`` and ``tokens`` signatures, and ``__call__``, which
``hub.KerasLayer`` runs, print one line on stderr per call that holds such
a token. It names the first one's sentence in the batch, as
``embed_sentences`` warns: unsegmented text, cut to the model's characters
per token. The limit is a constant of the exported graph.

It is ``tf.print`` in the graph, not :mod:`logging` as in the rest of the
library, because a SavedModel runs without our Python. TF Serving, or
``hub.load`` in a program that never imported bilm_keras, runs only the
graph, and the graph's one channel is its stream. In this process the
library's own paths, ``embed_sentences`` and ``bilm-keras embed``, warn
through ``logging`` before the model is called.
"""

from __future__ import annotations

import sys

import tensorflow as tf

from bilm_keras.data.long_tokens import LongTokenLimit

#: what the warning shows of a long token, in characters
_SHOWN = 24

#: ``tf.strings.length``'s unit for each of the limit's units
_TF_UNITS = {"bytes": "BYTE", "characters": "UTF8_CHAR"}


def warn_of_long_tokens(tokens: tf.RaggedTensor,
                        limit: LongTokenLimit) -> tf.Tensor:
    """Prints the warning when a token of ``tokens`` is past ``limit``.

    Args:
        tokens: `(batch, (n_tokens))` ragged tf.string.
        limit: the model's :class:`~bilm_keras.data.long_tokens.
            LongTokenLimit`.

    Returns:
        `()` bool: whether it warned (the print runs either way the
        result is used: a ``tf.function`` runs its stateful ops).
    """
    flat = tokens.flat_values  # (n,) every token of the batch
    lengths = tf.strings.length(flat, unit=_TF_UNITS[limit.unit])  # (n,)
    over = lengths > limit.length  # (n,)

    def warn():
        first = tf.where(over)[0, 0]
        sentence = tokens.value_rowids()[first]
        token = flat[first]
        cut = tf.strings.length(token, unit="UTF8_CHAR") > _SHOWN
        tf.print(tf.strings.join([
            "WARNING: sentence ", tf.strings.as_string(sentence),
            " of the batch: a token of ", tf.strings.as_string(lengths[first]),
            f" {limit.unit} ('",
            tf.strings.substr(token, 0, _SHOWN, unit="UTF8_CHAR"),
            tf.where(cut, "...", ""),
            f"'), longer than {limit.basis}: is the text segmented into "
            "words as the model's vocabulary was? The model expects "
            "whitespace-separated words (Chinese: '今天 天氣 真好'); it "
            f"reads the first {limit.read} {limit.unit} of a token and cuts "
            "the rest"]), output_stream=sys.stderr)
        return tf.constant(True)

    return tf.cond(tf.reduce_any(over), warn, lambda: tf.constant(False))
