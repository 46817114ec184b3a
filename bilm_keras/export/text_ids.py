"""Strings to a biLM's ids in the graph: the one place that picks the
in-graph converter for a model's input and runs it.

A model reads one of three kinds of ids, each equal to a batcher's:

* a bilm-tf character model: :class:`~bilm_keras.Batcher`'s char ids,
  ``batch_char_ids`` (:mod:`.graph_char_ids`).
* a converted ELMoForManyLangs model: :class:`~bilm_keras.ManyLangsBatcher`'s,
  :class:`~.graph_manylangs_ids.ManyLangsGraphIds`.
* a word-input model: :class:`~bilm_keras.TokenBatcher`'s,
  :class:`~.graph_word_ids.WordGraphIds`, without its last axis.

:class:`~bilm_keras.ELMoEmbedding` (on string inputs) and
:class:`~bilm_keras.ELMoPreprocessor` both go through
:func:`strings_to_ids`.
"""

from __future__ import annotations

from typing import Optional

import tensorflow as tf

from bilm_keras.export.graph_char_ids import batch_char_ids, split_sentences
from bilm_keras.export.graph_manylangs_ids import ManyLangsGraphIds
from bilm_keras.export.graph_word_ids import WordGraphIds


def graph_converter(*, use_character_inputs: bool,
                    max_characters_per_token: Optional[int],
                    vocabulary: Optional[list] = None,
                    char_dic: Optional[dict] = None,
                    word_dic: Optional[dict] = None, owner: str = "layer"):
    """The in-graph converter of a model's input.

    Returns:
        None for a bilm-tf character model (``batch_char_ids`` needs no
        table), a :class:`ManyLangsGraphIds` or a :class:`WordGraphIds`.

    Raises:
        ValueError: a word-input model without ``vocabulary``, named by
            ``owner``.
    """
    if not use_character_inputs:
        if vocabulary is None:
            raise ValueError(
                f"{owner}: vocabulary: a word-input model (no 'char_cnn' "
                "in its options) needs its vocabulary, found None")
        return WordGraphIds(vocabulary)
    if char_dic is not None:
        return ManyLangsGraphIds(char_dic, word_dic, max_characters_per_token)
    return None


def strings_to_ids(inputs: tf.Tensor, converter,
                   max_characters_per_token: Optional[int]) -> tf.Tensor:
    """`(batch,)` sentences or `(batch, time)` padded tokens -> the ids.

    Args:
        inputs: tf.string. Sentences are split as ``str.split()``. Padded
            tokens end at their row's first ``""``.
        converter: what :func:`graph_converter` returned.
        max_characters_per_token: a character model's, for
            ``batch_char_ids``.

    Returns:
        `(batch, time + 2, ids_width)` int32, or `(batch, time + 2)` for a
        word-input model, with ``<S>`` and ``</S>``, 0 past each row's
        end. Padded tokens keep the input's width as ``time``.
    """
    if inputs.shape.rank == 1:
        tokens, max_tokens = split_sentences(inputs), None
    else:
        tokens = tf.RaggedTensor.from_tensor(inputs, padding="")
        max_tokens = tf.shape(inputs, out_type=tf.int64)[1]
    if converter is None:
        return batch_char_ids(tokens, max_characters_per_token,
                              max_tokens=max_tokens)
    ids = converter.batch_ids(tokens, max_tokens=max_tokens)
    return ids[..., 0] if isinstance(converter, WordGraphIds) else ids
