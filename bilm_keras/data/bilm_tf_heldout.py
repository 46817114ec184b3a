"""bilm-tf's heldout stream, exactly as its ``bin/run_test.py`` read it.

``run_test.py`` evaluated with ``BidirectionalLMDataset(test_prefix,
vocab, test=True, shuffle_on_load=False)`` and ``unroll_steps = 1``. One
stream of sentences feeds every row of the batch. Each row takes its next
sentence from the stream whenever its current one runs out, as bilm-tf's
``_get_batch`` does, and :func:`~bilm_keras.data.lm_dataset.get_batches`
mirrors it. The LSTM states are carried from batch to batch, across
sentences, through the whole heldout data. This module reproduces these
points, where the training stream of
:class:`~bilm_keras.data.lm_dataset.LMDataset` differs:

* files come in bilm-tf's order, ``glob.glob``'s, the directory's and
  unsorted. The last one comes first, since bilm-tf popped them from the
  end of that list.
* every line is a sentence, blank ones too. A blank line is
  ``<S> </S>``, one prediction per direction. Lines end at ``\\n``,
  ``\\r\\n`` or ``\\r``, as in Python's text mode.
* the last incomplete batch is dropped, since bilm-tf stopped at the first
  batch it could not fill. So up to ``batch_size`` tokens per direction at
  the end are not scored.
* the batches have no ``sentence_start``. A
  :class:`~bilm_keras.models.language_model.LanguageModel` given them
  carries its states across sentences as bilm-tf's did.

One difference is a fix: a UTF-8 byte-order mark at the start of a file is
dropped. bilm-tf's locale decoding kept it glued to the first word.

Batches are those of :mod:`bilm_keras.data.lm_dataset` (+1-shifted
inputs, unshifted targets, ``mask`` all ones), ``B`` = batch_size::

    token_ids, next_token_id, mask   (B, num_steps)
    tokens_characters                (B, num_steps, C)   char vocabularies
    ... and each with ``_reverse`` for the backward direction.
"""

from __future__ import annotations

import glob
import os
from typing import Dict, Iterator, List

import numpy as np

from bilm_keras.data.batch_packing import get_batches
from bilm_keras.data.corpus import CorpusError
from bilm_keras.data.lm_dataset import check_vocab
from bilm_keras.data.utf8_lines import read_utf8_lines
from bilm_keras.data.vocabulary import UnicodeCharsVocabulary, Vocabulary


def bilm_tf_shard_order(filepattern) -> List[str]:
    """The files of ``filepattern`` in the order bilm-tf's test stream read
    them: ``glob.glob``'s list from its end.

    Raises:
        CorpusError: no file matches.
    """
    if not filepattern:
        raise CorpusError(f"test_prefix: expected a glob of heldout files, "
                          f"found {filepattern!r}")
    pattern = os.fspath(filepattern)
    shards = [p for p in glob.glob(pattern) if os.path.isfile(p)]
    if not shards:
        raise CorpusError(
            f"{pattern}: no heldout file matches this "
            "pattern (expected a glob of text files, one tokenized sentence "
            "per line)")
    return shards[::-1]


def read_bilm_tf_lines(path: str) -> Iterator[str]:
    """The lines of one file as bilm-tf's ``f.readlines()`` gave them
    (without their line ends), blank ones included."""
    for _, raw in read_utf8_lines(
            path, error=CorpusError,
            expected="a heldout file, UTF-8, one sentence per line",
            hint="heldout files must be UTF-8"):
        line = raw[:-1] if raw.endswith("\n") else raw
        if line.endswith("\r"):
            line = line[:-1]
        # a lone "\r" ends a line in Python's text mode too
        yield from line.split("\r")


def iter_bilm_tf_sentences(filepattern, vocab: Vocabulary, *,
                           reverse: bool) -> Iterator[tuple]:
    """``(ids (n+2,), char_ids (n+2, C) or None)`` per line, unshifted,
    encoded as bilm-tf's ``LMDataset`` did (``reverse``: the words
    reversed, ``</S> wn .. w1 <S>``)."""
    use_chars = isinstance(vocab, UnicodeCharsVocabulary)
    for path in bilm_tf_shard_order(filepattern):
        for line in read_bilm_tf_lines(path):
            tokens = line.split()
            if reverse:
                tokens = tokens[::-1]
            ids = vocab.encode(tokens, reverse, split=False)
            chars = (vocab.encode_chars(tokens, reverse, split=False)
                     if use_chars else None)
            yield ids, chars


def iter_bilm_tf_heldout_batches(
    filepattern, vocab: Vocabulary, batch_size: int, *,
    bidirectional: bool = True, num_steps: int = 1,
) -> Iterator[Dict[str, np.ndarray]]:
    """bilm-tf's test batches of ``filepattern`` (see the module doc).

    Args:
        filepattern: glob of UTF-8 heldout files.
        vocab: the model's vocabulary, with ``<S>``, ``</S>`` and
            ``<UNK>``. A :class:`UnicodeCharsVocabulary` adds
            ``tokens_characters``.
        batch_size: rows per batch (``run_test.py --batch_size``).
        bidirectional: add the backward stream's ``_reverse`` keys.
        num_steps: tokens per row per batch (1 in ``run_test.py``).
    """
    check_vocab(vocab)
    bilm_tf_shard_order(filepattern)  # no file: an error now, not later
    max_chars = (vocab.max_characters_per_token
                 if isinstance(vocab, UnicodeCharsVocabulary) else None)
    directions = [False, True] if bidirectional else [False]
    streams = [
        get_batches(iter_bilm_tf_sentences(filepattern, vocab,
                                           reverse=reverse),
                    batch_size, num_steps, max_chars, drain=False)
        for reverse in directions
    ]
    # both streams hold the same tokens and end with the same batch
    for parts in zip(*streams):
        batch = {}
        for part, suffix in zip(parts, ("", "_reverse")):
            del part["sentence_start"]  # states carried, as in bilm-tf
            batch.update({k + suffix: v for k, v in part.items()})
        yield batch
