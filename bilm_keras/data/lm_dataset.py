"""Language-model training data with bilm-tf's semantics, fed via tf.data.

A corpus is a glob of shard files, UTF-8, one whitespace-tokenized sentence
per line. :class:`LMDataset` turns it into an endless (training) or finite
(test) stream of sentences, each encoded as ``<S> w1 .. wn </S>`` (reversed
for the backward LM: ``</S> wn .. w1 <S>``), and packs that stream into
batches exactly as bilm-tf's ``_get_batch``:

* each of the ``batch_size`` rows is its own continuous stream of
  sentences; a batch holds the next ``num_steps`` tokens of every row. A
  sentence that does not fit continues in the same row of the next batch
  and the next sentence starts right after it, so the LSTM states a row
  ends one batch with are the right initial states for its next batch
  (truncated backpropagation through time);
* a sentence of ``n`` words has ``n + 2`` ids and gives ``n + 1``
  (input, target) pairs: inputs ``<S> w1 .. wn``, targets ``w1 .. wn </S>``.

Batches are dicts of numpy arrays (``B`` = batch_size, ``S`` = num_steps,
``C`` = max characters per token)::

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

Inputs are shifted by +1 like the inference :class:`Batcher` (so one
embedding table with a padding row serves training and inference); targets
are plain vocabulary ids. :class:`BidirectionalLMDataset` adds the same keys
with a ``_reverse`` suffix for the backward LM.

One difference from bilm-tf: bilm-tf dropped the last incomplete batch even
in test mode, so heldout perplexity skipped up to a batch of data. Here test
mode drains every row and yields the last batches padded (inputs 0, mask 0
on padding), so every target of the heldout data is seen exactly once.
"""

from __future__ import annotations

import collections
import glob
import itertools
import logging
import os
import random
from typing import Dict, Iterator, List, Optional

import numpy as np

from bilm_keras.data.unigram import unigram_perplexity
from bilm_keras.data.utf8_lines import read_utf8_lines
from bilm_keras.data.vocabulary import (
    UnicodeCharsVocabulary,
    Vocabulary,
    VocabularyError,
)

logger = logging.getLogger(__name__)


class CorpusError(ValueError):
    """A corpus glob or file that cannot be used as training data."""


def list_shards(filepattern) -> List[str]:
    """The sorted files matching ``filepattern``; a clear error if none."""
    if filepattern is None or str(filepattern).strip() == "":
        raise CorpusError(
            f"filepattern: expected a glob of corpus files, found "
            f"{filepattern!r}"
        )
    pattern = os.fspath(filepattern)
    shards = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
    if not shards:
        raise CorpusError(
            f"{pattern}: no corpus file matches this pattern (expected a "
            "glob of text files, one tokenized sentence per line)"
        )
    return shards


def read_lines(path: str) -> Iterator[tuple]:
    """Yield ``(line_number, line)`` of a UTF-8 corpus file, 1-based
    (:func:`~bilm_keras.data.utf8_lines.read_utf8_lines`).

    A line that is not valid UTF-8 raises :class:`CorpusError` naming the
    file, the line and the offending bytes.
    """
    return read_utf8_lines(
        path, error=CorpusError,
        expected="a corpus file, UTF-8, one sentence per line",
        hint="corpus files must be UTF-8")


def read_sentences(path: str) -> tuple:
    """``(lines, n_skipped)`` of one shard: the non-blank lines, stripped,
    and the number of blank lines (empty or whitespace only) skipped.

    Lines stay strings until they are batched: a few bytes per token in
    memory, where token lists (or bilm-tf's precomputed char ids, 200 bytes
    per token) would take ten to fifty times more for a large shard.
    """
    lines = []
    skipped = 0
    for _, line in read_lines(path):
        line = line.strip()
        if line:
            lines.append(line)
        else:
            skipped += 1
    return lines, skipped


def count_corpus(filepattern) -> tuple:
    """One pass over a corpus glob: ``(stats, token_counts)``.

    Returns:
        ``stats``: dict with ``n_tokens`` (whitespace tokens, without
        ``<S>``/``</S>``; bilm-tf's ``n_train_tokens``), ``n_sentences``
        (non-blank lines), ``n_skipped_lines`` (empty or whitespace-only
        lines) and ``n_files``; ``token_counts``: a ``Counter`` of the
        tokens (:mod:`bilm_keras.data.unigram` maps it to softmax classes).
    """
    shards = list_shards(filepattern)
    n_tokens = n_sentences = n_skipped = 0
    token_counts = collections.Counter()
    for path in shards:
        for _, line in read_lines(path):
            tokens = line.split()
            if tokens:
                n_tokens += len(tokens)
                n_sentences += 1
                token_counts.update(tokens)
            else:
                n_skipped += 1
    stats = dict(n_tokens=n_tokens, n_sentences=n_sentences,
                 n_skipped_lines=n_skipped, n_files=len(shards))
    return stats, token_counts


def count_tokens(filepattern, vocab: Optional[Vocabulary] = None) -> dict:
    """The ``stats`` of :func:`count_corpus`; with ``vocab`` (holding
    ``<UNK>``) and at least one sentence, also ``unigram_perplexity``, the
    corpus's unigram perplexity over it (:mod:`bilm_keras.data.unigram`).
    """
    stats, token_counts = count_corpus(filepattern)
    if vocab is not None and stats["n_sentences"]:
        stats["unigram_perplexity"] = unigram_perplexity(
            token_counts, stats["n_sentences"], vocab)
    return stats


def check_vocab(vocab) -> None:
    """The vocabulary must hold ``<S>``, ``</S>`` and ``<UNK>``."""
    if not isinstance(vocab, Vocabulary):
        raise TypeError(
            f"vocab: expected a Vocabulary or UnicodeCharsVocabulary, found "
            f"{type(vocab).__name__}"
        )
    missing = [name for name, idx in (("<S>", vocab.bos), ("</S>", vocab.eos),
                                      ("<UNK>", vocab.unk)) if idx < 0]
    if missing:
        raise VocabularyError(
            f"{vocab.filename}: a training vocabulary must contain the "
            f"special tokens <S>, </S> and <UNK>; missing: "
            f"{', '.join(missing)}"
        )


class LMDataset:
    """Sentences of a sharded corpus, batched as bilm-tf's ``LMDataset``.

    Args:
        filepattern: glob of UTF-8 shard files, one whitespace-tokenized
            sentence per line. Empty or whitespace-only lines are skipped
            and counted (:attr:`n_skipped_lines`, logged once per shard).
        vocab: a :class:`Vocabulary` (token inputs) or
            :class:`UnicodeCharsVocabulary` (char inputs, adds
            ``tokens_characters``); it must hold ``<S>``, ``</S>``, ``<UNK>``.
        reverse: the backward LM's stream: every sentence's words reversed
            and encoded ``</S> wn .. w1 <S>``.
        test: False (training): shards in random order, cycled forever.
            True: every shard once in sorted order, every sentence once,
            then the stream ends (last batches padded, see the module doc).
        shuffle_on_load: shuffle a shard's sentences each time it is loaded.
        seed: seed of this dataset's random generator (shard order and
            shuffling); None draws one from the system. Every call of
            :meth:`iter_batches` starts a new pass that continues this
            generator, so a fixed seed gives a reproducible sequence.
        shard_index, num_shards: read only part ``shard_index`` of
            ``num_shards`` disjoint parts of the corpus, for one input
            pipeline of a distributed strategy. With at least
            ``num_shards`` files, pipeline ``i`` reads the sorted files
            ``i, i + num_shards, ...``; with fewer files it reads every
            file but keeps the sentences ``i, i + num_shards, ...`` of each.

    Example:
        >>> vocab = UnicodeCharsVocabulary("vocab.txt", 50,
        ...                                validate_file=True)
        >>> data = LMDataset("train/*.txt", vocab, shuffle_on_load=True)
        >>> batch = next(data.iter_batches(batch_size=128, num_steps=20))
        >>> batch["tokens_characters"].shape
        (128, 20, 50)

    Reference:
        bilm-tf ``bilm/data.py`` (``LMDataset``, ``_get_batch``).
    """

    def __init__(self, filepattern, vocab: Vocabulary, reverse: bool = False,
                 test: bool = False, shuffle_on_load: bool = False,
                 seed: Optional[int] = None, shard_index: int = 0,
                 num_shards: int = 1):
        check_vocab(vocab)
        if not (isinstance(num_shards, int) and num_shards >= 1):
            raise ValueError(
                f"num_shards: expected an int >= 1, found {num_shards!r}"
            )
        if not (isinstance(shard_index, int)
                and 0 <= shard_index < num_shards):
            raise ValueError(
                f"shard_index: expected an int in [0, {num_shards}), found "
                f"{shard_index!r}"
            )
        self.filepattern = os.fspath(filepattern) if filepattern else None
        all_shards = list_shards(filepattern)
        self.vocab = vocab
        self.reverse = reverse
        self.test = test
        self.shuffle_on_load = shuffle_on_load
        self.seed = seed if seed is not None else random.SystemRandom(
        ).randrange(2**31)
        self.shard_index = shard_index
        self.num_shards = num_shards
        if len(all_shards) >= num_shards:
            self.shards = all_shards[shard_index::num_shards]
            self._sentence_stride = 1
        else:
            self.shards = all_shards
            self._sentence_stride = num_shards
        self.use_char_inputs = isinstance(vocab, UnicodeCharsVocabulary)
        self.max_characters_per_token = (
            vocab.max_characters_per_token if self.use_char_inputs else None
        )
        self.skipped_lines: Dict[str, int] = {}
        self._rng = random.Random(self.seed)

    @property
    def n_skipped_lines(self) -> int:
        """Blank lines skipped so far, each shard counted once."""
        return sum(self.skipped_lines.values())

    # -- sentences ---------------------------------------------------------

    def load_shard(self, path: str) -> List[str]:
        """The non-blank lines of one shard (this pipeline's share of
        them), shuffled when ``shuffle_on_load``."""
        sentences, skipped = read_sentences(path)
        if path not in self.skipped_lines:
            self.skipped_lines[path] = skipped
            if skipped:
                logger.warning(
                    "%s: skipped %d empty or whitespace-only line(s)",
                    path, skipped,
                )
        if self._sentence_stride > 1:
            sentences = sentences[self.shard_index::self._sentence_stride]
        if self.shuffle_on_load:
            self._rng.shuffle(sentences)
        logger.info("Loaded %d sentences from %s", len(sentences), path)
        return sentences

    def iter_lines(self) -> Iterator[str]:
        """Sentences as lines: one pass over the corpus in test mode, an
        endless stream in training."""
        if self.test:
            n_seen = 0
            for path in self.shards:
                sentences = self.load_shard(path)
                n_seen += len(sentences)
                yield from sentences
            if n_seen == 0:
                raise CorpusError(self._empty_message())
            return
        while True:
            order = list(self.shards)
            self._rng.shuffle(order)
            n_seen = 0
            for path in order:
                sentences = self.load_shard(path)
                n_seen += len(sentences)
                yield from sentences
            if n_seen == 0:
                raise CorpusError(self._empty_message())

    def _empty_message(self) -> str:
        where = (f" in input pipeline {self.shard_index} of "
                 f"{self.num_shards}" if self.num_shards > 1 else "")
        return (f"{self.filepattern}: no sentence to read{where} (every "
                f"line of {len(self.shards)} file(s) is blank); expected "
                "one tokenized sentence per line")

    def iter_sentences(self) -> Iterator[List[str]]:
        """Token lists of :meth:`iter_lines`, words reversed for the
        backward stream."""
        for line in self.iter_lines():
            tokens = line.split()
            yield tokens[::-1] if self.reverse else tokens

    def encode(self, tokens: List[str]) -> tuple:
        """``(ids (n+2,), char_ids (n+2, C) or None)`` of one token list,
        unshifted, with the boundary tokens of this direction."""
        ids = self.vocab.encode(tokens, self.reverse, split=False)
        chars = None
        if self.use_char_inputs:
            # same result as vocab.encode_chars, 3x faster: one gather from
            # the vocabulary's char-id table (whose <S>/</S> rows are the
            # boundary chars), then the spelling of each OOV token
            chars = self.vocab.word_char_ids[ids]  # (n + 2, C)
            for k in np.flatnonzero(ids[1:-1] == self.vocab.unk):
                chars[k + 1] = self.vocab.word_to_char_ids(tokens[k])
        return ids, chars

    def iter_encoded(self) -> Iterator[tuple]:
        for tokens in self.iter_sentences():
            yield self.encode(tokens)

    # -- batches -----------------------------------------------------------

    def iter_batches(self, batch_size: int, num_steps: int
                     ) -> Iterator[Dict[str, np.ndarray]]:
        """Batches of ``num_steps`` tokens per row (see the module doc)."""
        return get_batches(self.iter_encoded(), batch_size, num_steps,
                           self.max_characters_per_token, drain=self.test)

    def output_signature(self, batch_size: int, num_steps: int) -> dict:
        """``tf.TensorSpec`` of every key of :meth:`iter_batches`."""
        return batch_signature(batch_size, num_steps,
                               self.max_characters_per_token)


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
    if not (isinstance(batch_size, (int, np.integer)) and batch_size >= 1):
        raise ValueError(
            f"batch_size: expected an int >= 1, found {batch_size!r}"
        )
    if not (isinstance(num_steps, (int, np.integer)) and num_steps >= 1):
        raise ValueError(
            f"num_steps: expected an int >= 1, found {num_steps!r}"
        )
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


class BidirectionalLMDataset:
    """Forward and backward :class:`LMDataset` streams, batched together.

    Args are those of :class:`LMDataset` (without ``reverse``). Both streams
    get the same seed, so they see the same shards and sentences in the
    same order (bilm-tf drew both from one global generator, so its two
    streams were independent; each direction's model only ever sees its
    own stream, so either is correct). Batches hold the forward keys and the
    backward ones with a ``_reverse`` suffix (``token_ids_reverse``, ...).

    Example:
        >>> data = BidirectionalLMDataset("train/*.txt", vocab, seed=0)
        >>> sorted(next(data.iter_batches(2, 5)))[:3]
        ['mask', 'mask_reverse', 'next_token_id']
    """

    def __init__(self, filepattern, vocab: Vocabulary, test: bool = False,
                 shuffle_on_load: bool = False, seed: Optional[int] = None,
                 shard_index: int = 0, num_shards: int = 1):
        self.forward = LMDataset(
            filepattern, vocab, reverse=False, test=test,
            shuffle_on_load=shuffle_on_load, seed=seed,
            shard_index=shard_index, num_shards=num_shards)
        self.backward = LMDataset(
            filepattern, vocab, reverse=True, test=test,
            shuffle_on_load=shuffle_on_load, seed=self.forward.seed,
            shard_index=shard_index, num_shards=num_shards)
        self.vocab = vocab
        self.test = test
        self.max_characters_per_token = self.forward.max_characters_per_token
        self.use_char_inputs = self.forward.use_char_inputs

    @property
    def n_skipped_lines(self) -> int:
        return self.forward.n_skipped_lines

    @property
    def shards(self) -> List[str]:
        return self.forward.shards

    def iter_batches(self, batch_size: int, num_steps: int
                     ) -> Iterator[Dict[str, np.ndarray]]:
        forward = self.forward.iter_batches(batch_size, num_steps)
        backward = self.backward.iter_batches(batch_size, num_steps)
        # both streams hold the same tokens, so in test mode they end with
        # the same batch; zip stops at the shorter one regardless
        for x, xr in zip(forward, backward):
            for k, v in xr.items():
                x[k + "_reverse"] = v
            yield x

    def output_signature(self, batch_size: int, num_steps: int) -> dict:
        return batch_signature(batch_size, num_steps,
                               self.max_characters_per_token,
                               suffixes=("", "_reverse"))


def make_tf_dataset(dataset, batch_size: int, num_steps: int,
                    skip_batches: int = 0):
    """A prefetching ``tf.data.Dataset`` of ``dataset``'s batches.

    Python packs the batches in tf.data's background thread while the
    accelerator runs the previous step (``prefetch(AUTOTUNE)``).

    Args:
        dataset: an :class:`LMDataset` or :class:`BidirectionalLMDataset`.
        batch_size: rows per batch of this input pipeline.
        num_steps: tokens per row per batch (``unroll_steps``).
        skip_batches: batches of the stream to pass over first (a resumed
            run continues where its checkpoint left the data).

    Returns:
        ``tf.data.Dataset`` of dicts with the keys and static shapes of
        ``dataset.output_signature(batch_size, num_steps)``. Each iteration
        of it is a new pass (:meth:`LMDataset.iter_batches`).

    Row continuity under ``tf.distribute``:
        * one worker (default strategy or ``MirroredStrategy``): give
          ``strategy.experimental_distribute_dataset`` this dataset with the
          *global* batch size; every global batch is split along rows in
          order, so replica ``r`` always gets the same rows
          ``[r * b, (r + 1) * b)`` and each of its rows stays continuous.
        * several workers (``MultiWorkerMirroredStrategy``): build one
          pipeline per worker with :func:`lm_dataset_fn` through
          ``strategy.distribute_datasets_from_function``; each worker reads
          a disjoint part of the corpus (``shard_index``/``num_shards``).
    """
    import tensorflow as tf

    signature = dataset.output_signature(batch_size, num_steps)
    ds = tf.data.Dataset.from_generator(
        lambda: itertools.islice(
            dataset.iter_batches(batch_size, num_steps), skip_batches, None),
        output_signature=signature,
    )
    return ds.prefetch(tf.data.AUTOTUNE)


def lm_dataset_fn(filepattern, vocab: Vocabulary, *, global_batch_size: int,
                  num_steps: int, bidirectional: bool = True,
                  test: bool = False, shuffle_on_load: bool = False,
                  seed: Optional[int] = None, skip_batches: int = 0):
    """A ``dataset_fn(input_context)`` for
    ``strategy.distribute_datasets_from_function``.

    Input pipeline ``input_context.input_pipeline_id`` of
    ``num_input_pipelines`` (one per worker) reads its disjoint part of the
    corpus and yields batches of ``global_batch_size / num_replicas`` rows
    per replica (``input_context.get_per_replica_batch_size``). Pipeline
    ``i`` uses seed ``seed + i`` and passes over its first
    ``skip_batches`` batches. Meant for one replica per worker (each
    row then stays continuous on its replica); with several replicas per
    worker use ``experimental_distribute_dataset`` (see
    :func:`make_tf_dataset`).
    """

    def dataset_fn(input_context):
        batch_size = input_context.get_per_replica_batch_size(
            global_batch_size)
        index = input_context.input_pipeline_id
        kwargs = dict(
            test=test, shuffle_on_load=shuffle_on_load,
            seed=None if seed is None else seed + index,
            shard_index=index,
            num_shards=input_context.num_input_pipelines,
        )
        if bidirectional:
            data = BidirectionalLMDataset(filepattern, vocab, **kwargs)
        else:
            data = LMDataset(filepattern, vocab, **kwargs)
        return make_tf_dataset(data, batch_size, num_steps, skip_batches)

    return dataset_fn
