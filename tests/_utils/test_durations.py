"""Durations as people read them."""

from bilm_keras._utils.durations import format_duration


def test_format_duration():
    assert format_duration(0) == "0:00"
    assert format_duration(61.4) == "1:01"
    assert format_duration(3 * 3600 + 5) == "3:00:05"
