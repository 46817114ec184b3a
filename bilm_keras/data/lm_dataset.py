"""Language-model training data with bilm-tf's semantics.

The sentences of a corpus, see :mod:`bilm_keras.data.corpus`, form an
endless stream for training or a finite one for test. Each is encoded as
``<S> w1 .. wn </S>``, reversed for the backward LM as
``</S> wn .. w1 <S>``. They are packed into row-continuous batches, whose
layout :mod:`bilm_keras.data.batch_packing` gives.
:mod:`bilm_keras.data.tf_dataset` feeds them to ``tf.data``.
"""

from __future__ import annotations

import logging
import os
import random
from typing import Dict, Iterator, List, Optional

import numpy as np

from bilm_keras._utils.settings import check_int
from bilm_keras.data.batch_packing import batch_signature, get_batches
from bilm_keras.data.corpus import CorpusError, list_shards, read_sentences
from bilm_keras.data.vocabulary import (
    UnicodeCharsVocabulary,
    Vocabulary,
    VocabularyError,
)

logger = logging.getLogger(__name__)


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
            and counted in :attr:`n_skipped_lines`, logged once per shard.
        vocab: a :class:`Vocabulary` for token inputs, or a
            :class:`UnicodeCharsVocabulary` for char inputs, which adds
            ``tokens_characters``. It must hold ``<S>``, ``</S>``,
            ``<UNK>``.
        reverse: the backward LM's stream: every sentence's words reversed
            and encoded ``</S> wn .. w1 <S>``.
        test: bool. False, for training, takes shards in random order,
            cycled forever. True takes every shard once in sorted order,
            every sentence once, then the stream ends. The last batches
            are padded, see the module doc.
        shuffle_on_load: shuffle a shard's sentences each time it is loaded.
        seed: seed of this dataset's random generator, for shard order and
            shuffling. None draws one from the system. Every call of
            :meth:`iter_batches` starts a new pass that continues this
            generator, so a fixed seed gives a reproducible sequence.
        shard_index, num_shards: read only part ``shard_index`` of
            ``num_shards`` disjoint parts of the corpus, for one input
            pipeline of a distributed strategy. With at least
            ``num_shards`` files, pipeline ``i`` reads the sorted files
            ``i, i + num_shards, ...``. With fewer files it reads every
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
        check_int("num_shards", num_shards, 1)
        check_int("shard_index", shard_index, 0, maximum=num_shards - 1)
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
        logger.debug("Loaded %d sentences from %s", len(sentences), path)
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


class BidirectionalLMDataset:
    """Forward and backward :class:`LMDataset` streams, batched together.

    Args are those of :class:`LMDataset`, without ``reverse``. Both
    streams get the same seed, so they see the same shards and sentences
    in the same order. In bilm-tf both came from one global generator, so
    its two streams were independent. Each direction's model only ever sees
    its own stream, so either is correct. Batches hold the forward keys
    and the backward ones with a ``_reverse`` suffix, e.g.
    ``token_ids_reverse``.

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
