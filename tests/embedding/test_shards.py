"""Which lines shard ``K`` of ``N`` embeds (``--shard K/N``)."""

import pytest

from bilm_keras.embedding.shards import parse_shard, shard_lines


def test_shard_arithmetic():
    assert parse_shard("2/5") == (2, 5)
    assert [shard_lines(k, 4, 10) for k in range(4)] == [
        (0, 2), (2, 5), (5, 7), (7, 10)]
    assert [shard_lines(k, 3, 2) for k in range(3)] == [
        (0, 0), (0, 1), (1, 2)]  # more shards than lines: some are empty
    for bad in ["3/3", "-1/2", "1", "a/b", "1/0", ""]:
        with pytest.raises(ValueError, match=r"expected K/N with 0 <= K < "
                                             r"N \(e\.g\. 0/4\), found"):
            parse_shard(bad)
