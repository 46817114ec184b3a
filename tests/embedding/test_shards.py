"""Which lines shard ``K`` of ``N`` embeds (``--shard K/N``)."""

import pytest

from bilm_keras.embedding.shards import parse_shard, shard_lines


def test_shard_arithmetic():
    assert parse_shard("2/5") == (2, 5)
    # chunks of one line: the lines split as evenly as they can
    assert [shard_lines(k, 4, 10, 1) for k in range(4)] == [
        (0, 2), (2, 5), (5, 7), (7, 10)]
    assert [shard_lines(k, 3, 2, 1) for k in range(3)] == [
        (0, 0), (0, 1), (1, 2)]  # more shards than lines: some are empty
    # whole chunks of the single run: 11 lines in chunks of 3 are
    # [0, 3) [3, 6) [6, 9) [9, 11); shard 2 of 3 takes the last two
    assert [shard_lines(k, 3, 11, 3) for k in range(3)] == [
        (0, 3), (3, 6), (6, 11)]
    assert [shard_lines(k, 3, 2, 4096) for k in range(3)] == [
        (0, 0), (0, 0), (0, 2)]  # fewer chunks than shards
    assert shard_lines(0, 1, 0, 5) == (0, 0)  # an empty file


@pytest.mark.parametrize("n_lines, chunk, n_shards",
                         [(11, 3, 3), (10, 4, 4), (100, 7, 6), (5, 10, 2),
                          (4096 * 3 + 1, 4096, 8)])
def test_shards_are_whole_chunks_covering_every_line_once(n_lines, chunk,
                                                          n_shards):
    bounds = [shard_lines(k, n_shards, n_lines, chunk)
              for k in range(n_shards)]
    assert bounds[0][0] == 0 and bounds[-1][1] == n_lines
    for (_, end), (first, _) in zip(bounds, bounds[1:]):
        assert end == first  # contiguous: every line once
    chunk_starts = set(range(0, n_lines, chunk)) | {n_lines}
    n_chunks = []
    for first, end in bounds:
        assert first in chunk_starts and end in chunk_starts
        n_chunks.append(len(range(first, end, chunk)))
    assert max(n_chunks) - min(n_chunks) <= 1
    for bad in ["3/3", "-1/2", "1", "a/b", "1/0", ""]:
        with pytest.raises(ValueError, match=r"expected K/N with 0 <= K < "
                                             r"N \(e\.g\. 0/4\), found"):
            parse_shard(bad)
