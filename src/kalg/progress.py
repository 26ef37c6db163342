"""Progress on the command line: `reporter(stats=...)` picks how stage messages are shown.

With --stats every message is its own `kalg: ...` line on stderr (as before). Otherwise, on a
terminal, one status line on stderr is rewritten in place (stage, search n of m, seconds since
the start) and cleared at the end; when stderr is not a terminal nothing is printed.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable


class StatusLine:
    """A single rewritable stderr line; `close()` erases it. No clock thread: kalg forks its
    e-graph child while this line is up, and forking a multi-threaded process can deadlock."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.shown = False

    def __call__(self, message: str) -> None:
        width = shutil.get_terminal_size((80, 20)).columns - 1
        line = f"kalg: {time.monotonic() - self.start:5.1f} s  {message}"[:width]
        self.stream.write("\r\033[K" + line)
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False


def reporter(stats: bool, stream=None) -> tuple[Callable[[str], None] | None, Callable[[], None]]:
    """(progress callback or None, a function to call when the work is done)."""
    stream = stream or sys.stderr
    if stats:
        return (lambda message: _line(stream, f"kalg: {message}")), _nothing
    if stream.isatty():
        line = StatusLine(stream)
        return line, line.close
    return None, _nothing


def warner(stream=None) -> Callable[[str], None]:
    """Prints `kalg: warning: ...` on stderr at once (before a long search goes on)."""
    stream = stream or sys.stderr

    def warn(message: str) -> None:
        _line(stream, f"\r\033[Kkalg: warning: {message}" if stream.isatty()
              else f"kalg: warning: {message}")

    return warn


def _line(stream, text: str) -> None:
    """`text` and its line break in ONE write: the code generator's worker processes report
    too, and print's two writes (text, then the break) interleaved theirs into one line."""
    stream.write(text + "\n")
    stream.flush()


def _nothing() -> None:
    return None
