"""Shards of a sentence file: which lines process ``K`` of ``N`` embeds
(``bilm-keras embed --shard K/N``). Pure Python: the command parses
``--shard`` before it imports anything heavy."""

from __future__ import annotations

import re


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


def shard_lines(shard: int, n_shards: int, n_lines: int) -> tuple[int, int]:
    """Shard ``shard`` of ``n_shards``: the lines ``[a, b)`` it embeds,
    ``a = shard * n_lines // n_shards`` (contiguous, sizes differ by at
    most one, together every line once)."""
    return (shard * n_lines // n_shards,
            (shard + 1) * n_lines // n_shards)
