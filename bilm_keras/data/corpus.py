"""A training corpus on disk: a glob of shard files, UTF-8, one
whitespace-tokenized sentence per line. Listing, reading and counting
them (no TensorFlow, no numpy)."""

from __future__ import annotations

import collections
import glob
import os
from typing import Iterator, List, Optional

from bilm_keras.data.unigram import unigram_perplexity
from bilm_keras.data.utf8_lines import read_utf8_lines
from bilm_keras.data.vocabulary import Vocabulary


class CorpusError(ValueError):
    """A corpus glob or file that cannot be used as training data."""


def list_shards(filepattern) -> List[str]:
    """The sorted files matching ``filepattern``, or a clear error if
    none."""
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

    Lines stay strings until they are batched, a few bytes per token in
    memory. Token lists would take ten to fifty times more for a large
    shard, as would bilm-tf's precomputed char ids, 200 bytes per token.
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
        ``stats``: dict with ``n_tokens``, ``n_sentences``,
        ``n_skipped_lines`` and ``n_files``. ``n_tokens`` counts
        whitespace tokens without ``<S>``/``</S>``, bilm-tf's
        ``n_train_tokens``. ``n_sentences`` counts non-blank lines, and
        ``n_skipped_lines`` empty or whitespace-only ones.

        ``token_counts``: a ``Counter`` of the tokens, which
        :mod:`bilm_keras.data.unigram` maps to softmax classes.
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
    """The ``stats`` of :func:`count_corpus`.

    With ``vocab``, which holds ``<UNK>``, and at least one sentence, they
    also hold ``unigram_perplexity``. That is the corpus's unigram
    perplexity over ``vocab`` (:mod:`bilm_keras.data.unigram`).
    """
    stats, token_counts = count_corpus(filepattern)
    if vocab is not None and stats["n_sentences"]:
        stats["unigram_perplexity"] = unigram_perplexity(
            token_counts, stats["n_sentences"], vocab)
    return stats
