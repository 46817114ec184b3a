"""Encoded sentences packed into training batches exactly as bilm-tf's
``_get_batch``.

* Each of the ``batch_size`` rows is its own continuous stream of
  sentences. A batch holds the next ``num_steps`` tokens of every row. A
  sentence that does not fit continues in the same row of the next batch,
  and the next sentence starts right after it. So the LSTM states a row
  ends one batch with are the right initial states for its next batch,
  i.e. truncated backpropagation through time.
* A sentence of ``n`` words has ``n + 2`` ids and gives ``n + 1``
  (input, target) pairs: inputs ``<S> w1 .. wn``, targets ``w1 .. wn </S>``.

Batches are dicts of numpy arrays, with ``B`` = batch_size, ``S`` =
num_steps and ``C`` = max characters per token::

    token_ids          (B, S)    int32    vocab id + 1, 0 = padding
    tokens_characters  (B, S, C) int32    char id + 1, 0 = padding
                                          (only with a UnicodeCharsVocabulary)
    next_token_id      (B, S)    int32    vocab id of the next token (the
                                          softmax class, 0 .. V-1; OOV ->
                                          <UNK>), 0 on padding
    mask               (B, S)    float32  1.0 where next_token_id is a real
                                          target, 0.0 on padding
    sentence_start     (B, S)    float32  1.0 where a sentence's first input
                                          (``<S>``; ``</S>`` backward) is:
                                          the LM starts it from zero states

Inputs are shifted by +1 like the inference :class:`Batcher`, so one
embedding table with a padding row serves training and inference. Targets
are plain vocabulary ids. :class:`~bilm_keras.data.lm_dataset.
BidirectionalLMDataset` adds the same keys with a ``_reverse`` suffix for
the backward LM.

One difference from bilm-tf: bilm-tf dropped the last incomplete batch even
in test mode, so heldout perplexity skipped up to a batch of data. Here test
mode drains every row and yields the last batches padded, with inputs 0
and mask 0 on padding. So every target of the heldout data is seen exactly
once.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional

import numpy as np

from bilm_keras._utils.settings import check_int


def get_batches(sentences: Iterator[tuple], batch_size: int, num_steps: int,
                max_characters_per_token: Optional[int], drain: bool = False
                ) -> Iterator[Dict[str, np.ndarray]]:
    """Pack encoded sentences into row-continuous batches (bilm-tf's
    ``_get_batch``).

    Args:
        sentences: iterator of ``(ids (n,), char_ids (n, C) or None)``.
        drain: when the iterator ends, keep yielding padded batches until
            every row's stream is empty (test mode). False: stop at the
            first batch that cannot be filled (bilm-tf).
    """
    check_int("batch_size", batch_size, 1)
    check_int("num_steps", num_steps, 1)
    use_chars = max_characters_per_token is not None
    # cur_stream[i] = [ids, chars, pos]: the rest of row i's sentence
    cur_stream: List[Optional[list]] = [None] * batch_size
    no_more_data = False
    while True:
        # B=batch_size, S=num_steps, C=max_characters_per_token
        inputs = np.zeros([batch_size, num_steps], np.int32)  # (B, S)
        targets = np.zeros([batch_size, num_steps], np.int32)  # (B, S)
        mask = np.zeros([batch_size, num_steps], np.float32)  # (B, S)
        starts = np.zeros([batch_size, num_steps], np.float32)  # (B, S)
        char_inputs = (
            np.zeros([batch_size, num_steps, max_characters_per_token],
                     np.int32)
            if use_chars else None
        )  # (B, S, C)
        n_real = 0
        for i in range(batch_size):
            cur_pos = 0
            while cur_pos < num_steps:
                stream = cur_stream[i]
                # a sentence with one id left has no target left: next one
                if stream is None or len(stream[0]) - stream[2] <= 1:
                    if no_more_data:
                        break
                    try:
                        ids, chars = next(sentences)
                    except StopIteration:
                        no_more_data = True
                        cur_stream[i] = None
                        break
                    stream = cur_stream[i] = [ids, chars, 0]
                ids, chars, start = stream
                how_many = min(len(ids) - 1 - start, num_steps - cur_pos)
                next_pos = cur_pos + how_many
                stop = start + how_many
                # +1 on inputs: 0 is the padding id, as in Batcher
                inputs[i, cur_pos:next_pos] = ids[start:stop] + 1
                if use_chars:
                    char_inputs[i, cur_pos:next_pos] = chars[start:stop] + 1
                targets[i, cur_pos:next_pos] = ids[start + 1:stop + 1]
                mask[i, cur_pos:next_pos] = 1.0
                if start == 0:
                    starts[i, cur_pos] = 1.0
                n_real += how_many
                stream[2] = stop
                cur_pos = next_pos
        if no_more_data and (not drain or n_real == 0):
            # bilm-tf: the incomplete batch is dropped; drain: all done
            return
        batch = {"token_ids": inputs, "next_token_id": targets,
                 "mask": mask, "sentence_start": starts}
        if use_chars:
            batch["tokens_characters"] = char_inputs
        yield batch


def batch_signature(batch_size: int, num_steps: int,
                    max_characters_per_token: Optional[int],
                    suffixes=("",)) -> dict:
    """``tf.TensorSpec`` dict of the batches (keys per ``suffixes``)."""
    import tensorflow as tf

    spec = {}
    for suffix in suffixes:
        spec["token_ids" + suffix] = tf.TensorSpec(
            (batch_size, num_steps), tf.int32)
        spec["next_token_id" + suffix] = tf.TensorSpec(
            (batch_size, num_steps), tf.int32)
        spec["mask" + suffix] = tf.TensorSpec(
            (batch_size, num_steps), tf.float32)
        spec["sentence_start" + suffix] = tf.TensorSpec(
            (batch_size, num_steps), tf.float32)
        if max_characters_per_token is not None:
            spec["tokens_characters" + suffix] = tf.TensorSpec(
                (batch_size, num_steps, max_characters_per_token), tf.int32)
    return spec
