"""Build a bilm-tf vocabulary file from a training corpus.

The file holds ``<S>``, ``</S>``, ``<UNK>``, ids 0, 1 and 2, and then the
corpus tokens by descending count. Tokens with the same count keep the
order in which they first occur in the corpus, files in sorted order. So
the result is deterministic and does not depend on hashing. A sidecar
``<vocab_file>.json`` records ``n_train_tokens``, bilm-tf's hand-set
training option, the sentence count and the source glob.
"""

from __future__ import annotations

import collections
import json
import os
from typing import Optional

from bilm_keras._utils.atomic_files import write_text_atomic
from bilm_keras._utils.settings import check_int
from bilm_keras.data.corpus import list_shards, read_lines
from bilm_keras.data.unigram import perplexity_of_counts
from bilm_keras.data.vocabulary import BOS_TOKEN, EOS_TOKEN, UNK_TOKEN

SPECIAL_TOKENS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)


def sidecar_path(vocab_file) -> str:
    """The ``.json`` file written beside a vocabulary by :func:`build_vocab`."""
    return os.fspath(vocab_file) + ".json"


def read_vocab_stats(vocab_file) -> Optional[dict]:
    """The sidecar statistics of a vocabulary, or None when there is none."""
    path = sidecar_path(vocab_file)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def build_vocab(train_prefix, vocab_file, *, min_count: int = 1,
                max_size: Optional[int] = None) -> dict:
    """Count the tokens of a corpus glob and write its vocabulary.

    Args:
        train_prefix: glob of UTF-8 corpus files, one whitespace-tokenized
            sentence per line. Blank lines are skipped and counted.
        vocab_file: output path. It is written atomically, by a temp file
            and ``os.replace``, together with ``vocab_file + ".json"``.
        min_count: keep tokens seen at least this often.
        max_size: at most this many lines in the file, the three special
            tokens included. None means no limit.

    Returns:
        dict with these keys, the same dict as the sidecar file's content.

        - ``n_train_tokens``: corpus tokens without ``<S>`` and ``</S>``,
          bilm-tf's training option.
        - ``n_sentences``, ``n_skipped_lines``, ``n_files``.
        - ``n_types``: distinct corpus tokens.
        - ``n_tokens_vocab``: lines written.
        - ``n_oov_tokens``: corpus tokens that will map to ``<UNK>``.
        - ``unigram_perplexity``: of the LM targets over this vocabulary,
          see :mod:`bilm_keras.data.unigram`.
        - ``train_prefix``, ``vocab_file``, ``min_count`` and
          ``max_size``.
    """
    check_int("min_count", min_count, 1)
    if max_size is not None and not (isinstance(max_size, int)
                                     and max_size >= len(SPECIAL_TOKENS)):
        raise ValueError(
            f"max_size: expected None or an int >= {len(SPECIAL_TOKENS)} "
            f"(the special tokens <S>, </S>, <UNK>), found {max_size!r}"
        )
    vocab_file = os.fspath(vocab_file)
    shards = list_shards(train_prefix)
    # a Counter keeps insertion (= first occurrence) order, and sorted() is
    # stable, so ties keep the order of first occurrence
    counts: collections.Counter = collections.Counter()
    n_tokens = n_sentences = n_skipped = 0
    for path in shards:
        for _, line in read_lines(path):
            tokens = line.split()
            if not tokens:
                n_skipped += 1
                continue
            counts.update(tokens)
            n_tokens += len(tokens)
            n_sentences += 1
    for special in SPECIAL_TOKENS:
        # the corpus spelling of a special token is that special token
        counts.pop(special, None)
    words = [w for w, c in sorted(counts.items(), key=lambda wc: -wc[1])
             if c >= min_count]
    if max_size is not None:
        words = words[: max_size - len(SPECIAL_TOKENS)]
    kept = set(words)
    n_oov = sum(c for w, c in counts.items() if w not in kept)
    # LM targets: kept tokens, <UNK> for the rest, one boundary a sentence
    targets = [counts[w] for w in words] + [n_oov, n_sentences]
    stats = dict(
        n_train_tokens=n_tokens,
        n_sentences=n_sentences,
        n_skipped_lines=n_skipped,
        n_files=len(shards),
        n_types=len(counts),
        n_tokens_vocab=len(words) + len(SPECIAL_TOKENS),
        n_oov_tokens=n_oov,
        unigram_perplexity=(perplexity_of_counts(targets) if n_sentences
                            else None),
        train_prefix=os.fspath(train_prefix),
        vocab_file=vocab_file,
        min_count=min_count,
        max_size=max_size,
    )
    lines = list(SPECIAL_TOKENS) + words
    write_text_atomic(vocab_file, "\n".join(lines) + "\n")
    write_text_atomic(sidecar_path(vocab_file),
                  json.dumps(stats, indent=2, ensure_ascii=False) + "\n")
    return stats
