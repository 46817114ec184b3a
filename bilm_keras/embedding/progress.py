"""A one-line progress bar with total, rate and ETA (no TensorFlow)."""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

from bilm_keras._utils.durations import format_duration


class ProgressBar:
    """Sentences done of a known total, with the token rate and the ETA.

    The ETA divides the tokens still to do by the token rate so far. The
    cost of a sentence is about proportional to its tokens. Sentences are
    embedded shortest first within a chunk, so counting sentences would
    promise too early an end.

    Args:
        total: sentences to do.
        total_tokens: tokens to do. With None the ETA counts sentences.
        label: first word of the line.
        file: where to write (default ``sys.stderr``).
        interactive: redraw one line in place at every update, for a
            terminal. False writes a new line at most every ``log_every``
            seconds and at the end, for a log file. None takes
            ``file.isatty()``.
        log_every: seconds between lines when not interactive.
        clock: seconds, monotonic (for tests).

    Example:
        >>> bar = ProgressBar(100, total_tokens=2000, label="embed")
        >>> bar.update(32, tokens=640)   # once per batch
        >>> bar.close()
    """

    width = 24

    def __init__(self, total: int, *, total_tokens: Optional[int] = None,
                 label: str = "", file: Optional[TextIO] = None,
                 interactive: Optional[bool] = None, log_every: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.total_tokens = total_tokens
        self.label = label
        self.file = sys.stderr if file is None else file
        if interactive is None:
            isatty = getattr(self.file, "isatty", None)
            interactive = bool(isatty and isatty())
        self.interactive = interactive
        self.log_every = log_every
        self.clock = clock
        self.done = 0
        self.done_tokens = 0
        self.start = clock()
        self._last_line_at = None
        self._last_line_done = None
        self._last_width = 0
        self._closed = False

    def update(self, n: int, tokens: int = 0) -> None:
        """Adds ``n`` sentences of ``tokens`` tokens and redraws."""
        self.done += n
        self.done_tokens += tokens
        now = self.clock()
        if self.interactive:
            self._write(self.line(now), end="")
        elif (self._last_line_at is None
              or now - self._last_line_at >= self.log_every):
            self._write(self.line(now), end="\n")
            self._last_line_at = now
            self._last_line_done = self.done

    def close(self) -> None:
        """Draws the final state and ends the line (once)."""
        if self._closed:
            return
        self._closed = True
        if self.interactive or self._last_line_done != self.done:
            self._write(self.line(self.clock()), end="\n")

    def line(self, now: float) -> str:
        """The progress line at time ``now``."""
        elapsed = max(now - self.start, 1e-9)
        fraction = self.done / self.total if self.total else 1.0
        filled = int(self.width * min(fraction, 1.0))
        bar = "=" * filled
        if filled < self.width:
            bar += ">" + "." * (self.width - filled - 1)
        parts = [
            f"{self.label} " if self.label else "",
            f"{self.done:,}/{self.total:,} sentences [{bar}] "
            f"{100 * fraction:3.0f}%",
        ]
        rate = self.done_tokens / elapsed
        if self.done_tokens:
            parts.append(f" {rate:,.0f} tokens/s")
        else:
            parts.append(f" {self.done / elapsed:,.1f} sentences/s")
        parts.append(f" {format_duration(elapsed)}")
        if self.done < self.total and self.done:
            if self.total_tokens and self.done_tokens:
                left = (self.total_tokens - self.done_tokens) / rate
            else:
                left = (self.total - self.done) * elapsed / self.done
            parts.append(f" ETA {format_duration(left)}")
        return "".join(parts)

    def _write(self, line: str, end: str) -> None:
        if self.interactive:
            pad = " " * max(self._last_width - len(line), 0)
            self._last_width = len(line)
            line = "\r" + line + pad
        self.file.write(line + end)
        self.file.flush()
