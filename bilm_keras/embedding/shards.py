"""Shards of a sentence file: which lines process ``K`` of ``N`` embeds
(``bilm-keras embed --shard K/N``). Pure Python: the command parses
``--shard`` before it imports anything heavy."""

from __future__ import annotations

import re

#: lines read, sorted and embedded together unless a run says otherwise;
#: a shard is a run of whole chunks (:func:`shard_lines`)
CHUNK_SIZE = 4096


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with ``0 <= K < N``.

    Raises:
        ValueError: anything else (the message says what was expected).
    """
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if match is None or not 0 <= int(match[1]) < int(match[2]):
        raise ValueError(f"expected K/N with 0 <= K < N (e.g. 0/4), found "
                         f"{text!r}")
    return int(match[1]), int(match[2])


def shard_lines(shard: int, n_shards: int, n_lines: int,
                chunk_size: int) -> tuple[int, int]:
    """Shard ``shard`` of ``n_shards``: the lines ``[a, b)`` it embeds.

    A shard is a run of whole chunks of the single run: the input's
    ``c = ceil(n_lines / chunk_size)`` chunks of ``chunk_size`` lines
    (the last one shorter) are split into contiguous runs, shard ``K``
    taking chunks ``[K * c // N, (K + 1) * c // N)``; together every line
    once. Each shard therefore sorts and batches every sentence with the
    same batch-mates as the single run, and TensorFlow's CPU kernels,
    whose result for a row may depend on the other rows of its batch, give
    the same bits: the merged shards equal the single run's file. Chunk
    counts differ by at most one between shards; with fewer chunks than
    shards some shards are empty.

    Example:
        >>> [shard_lines(k, 3, 11, 3) for k in range(3)]
        [(0, 3), (3, 6), (6, 11)]
    """
    n_chunks = -(-n_lines // chunk_size)
    first = shard * n_chunks // n_shards * chunk_size
    end = (shard + 1) * n_chunks // n_shards * chunk_size
    return min(first, n_lines), min(end, n_lines)
