"""Durations as people read them (progress lines, download ETAs)."""


def format_duration(seconds: float) -> str:
    """``h:mm:ss`` (``m:ss`` under an hour)."""
    seconds = int(round(max(seconds, 0)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
