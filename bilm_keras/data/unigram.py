"""The unigram perplexity of a corpus: the baseline every LM must beat.

A language model that predicts each next token no better than the
corpus's own word frequencies has learned nothing about context. One that
does worse on heldout data than those frequencies do on the training data
is broken. Examples are a direction trained on a stream it does not see
at test time, or a diverged softmax. ``train`` and ``build_vocab`` record
the training data's unigram perplexity. ``evaluate`` warns about any
direction whose heldout perplexity is above it.

The targets of either direction are the same multiset, so one number
serves both. They are every token of a sentence, mapped to ``<UNK>`` when
out of the vocabulary, and one sentence boundary: ``</S>`` forward and
``<S>`` backward.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np


def perplexity_of_counts(counts) -> float:
    """``exp`` of the entropy of the distribution ``counts / sum(counts)``:
    the perplexity of the counted targets under their own unigram
    frequencies. ``counts``: non-negative numbers, one per class."""
    counts = np.asarray(counts, np.float64)
    counts = counts[counts > 0]
    if counts.size == 0:
        raise ValueError("counts: expected at least one positive count")
    total = counts.sum()
    entropy = -float(np.sum(counts * np.log(counts / total))) / total
    return math.exp(entropy)


def target_counts(token_counts: Mapping[str, int], n_sentences: int,
                  vocab, *, bidirectional: bool = False) -> np.ndarray:
    """How often each softmax class is a target, `(vocab.size,)` float64.

    Every token of a sentence is a target, as ``<UNK>`` when ``vocab``
    lacks it. So is each sentence's boundary: ``</S>`` for the forward LM,
    ``<S>`` for the backward one. With ``bidirectional``, both directions'
    targets count, since the one softmax they share sees both. Otherwise
    one direction's do.

    Args:
        token_counts: how often each corpus token occurs.
        n_sentences: sentences of the corpus.
        vocab: a :class:`~bilm_keras.data.vocabulary.Vocabulary` with
            ``<S>``, ``</S>`` and ``<UNK>``.
    """
    directions = 2 if bidirectional else 1
    counts = np.zeros(vocab.size, np.float64)
    for word, count in token_counts.items():
        counts[vocab.word_to_id(word)] += directions * count
    counts[vocab.eos] += n_sentences
    if bidirectional:
        counts[vocab.bos] += n_sentences
    return counts


def unigram_perplexity(token_counts: Mapping[str, int], n_sentences: int,
                       vocab) -> float:
    """The unigram perplexity of a corpus's LM targets over ``vocab``
    (one direction's, :func:`target_counts`)."""
    return perplexity_of_counts(
        target_counts(token_counts, n_sentences, vocab))
